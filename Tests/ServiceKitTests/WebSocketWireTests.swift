import Dispatch
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import ServiceKit

@Suite("A connection's frames written straight to its channel: framed as NIO frames them, a batch in one flush, waits only while the channel is full")
struct WebSocketWireTests {
    /// What NIO's own encoder writes for a final, unmasked frame.
    private func nioFrame(_ opcode: WebSocketOpcode, _ payload: ByteBuffer) throws -> [UInt8] {
        let channel = EmbeddedChannel(handler: WebSocketFrameEncoder())
        try channel.writeOutbound(WebSocketFrame(fin: true, opcode: opcode, data: payload))
        var bytes: [UInt8] = []
        while var buffer = try channel.readOutbound(as: ByteBuffer.self) { bytes += buffer.readBytes(length: buffer.readableBytes) ?? [] }
        return bytes
    }

    @Test("text and ping frames are byte for byte NIO's, at every length class", arguments: [0, 1, 125, 126, 127, 65_535, 65_536, 70_000])
    func framing(length: Int) throws {
        let payload = ByteBuffer(bytes: (0..<length).map { UInt8(truncatingIfNeeded: $0) })
        var ours = WebSocketFraming.text(payload)
        #expect(ours.readBytes(length: ours.readableBytes) == (try self.nioFrame(.text, payload)))
        #expect(WebSocketFraming.headerLength(payload: length) + length == (try self.nioFrame(.text, payload)).count)
        if length <= 125 {
            var ping = ByteBuffer()
            WebSocketFraming.writeHeader(.ping, payload: length, into: &ping)
            ping.writeImmutableBuffer(payload)
            #expect(ping.readBytes(length: ping.readableBytes) == (try self.nioFrame(.ping, payload)))
        }
    }

    private func wiredChannel() async throws -> (EmbeddedChannel, WebSocketWireHandler) {
        let channel = EmbeddedChannel(handler: WebSocketFrameEncoder())
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        return (channel, try WebSocketWireHandler.install(on: channel.pipeline.syncOperations, eventLoop: channel.eventLoop))
    }

    @Test("a batch goes out in its order with one flush, below the frame encoder")
    func batch() async throws {
        let (channel, wire) = try await self.wiredChannel()
        try wire.submit([ByteBuffer(string: "a"), ByteBuffer(string: "b"), ByteBuffer(string: "c")], bytes: 3)
        channel.embeddedEventLoop.run()
        var written: [String] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { written.append(String(buffer: buffer)) }
        #expect(written == ["a", "b", "c"])
        #expect(try wire.readyNow())
        // What Hummingbird writes (a frame for the encoder) still passes.
        try channel.writeOutbound(WebSocketFrame(fin: true, opcode: .pong, data: ByteBuffer()))
        #expect(try channel.readOutbound(as: ByteBuffer.self) != nil)
    }

    @Test("frames framed once: small ones are copied into the batch's buffer beside their neighbours, large ones are written as they are")
    func framedBatch() async throws {
        let (channel, wire) = try await self.wiredChannel()
        let connection = WebSocketConnection.forTests()
        let writer = WebSocketFrameWriter(wire: wire, connection: connection)
        let frames = [10, 20, 2000, 30].map { WebSocketFraming.text(ByteBuffer(repeating: UInt8(truncatingIfNeeded: $0), count: $0)) }
        for frame in frames { try await writer.send(framed: frame) }
        writer.endBatch()
        channel.embeddedEventLoop.run()
        var written: [ByteBuffer] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { written.append(buffer) }
        // The two small frames in one buffer, the large one as it was, the last small one.
        try #require(written.count == 3)
        #expect(
            written.map(\.readableBytes) == [frames[0].readableBytes + frames[1].readableBytes, frames[2].readableBytes, frames[3].readableBytes]
        )
        #expect(written[1] == frames[2])
        #expect(
            written.reduce(into: ByteBuffer()) { $0.writeImmutableBuffer($1) } == frames.reduce(into: ByteBuffer()) { $0.writeImmutableBuffer($1) }
        )
    }

    @Test("the writer waits while the channel is full, goes on when it drains, and fails once it closes")
    func backpressure() async throws {
        let (channel, wire) = try await self.wiredChannel()
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try !wire.readyNow())
        let waiting = Task { try await wire.ready() }
        try await Task.sleep(for: .milliseconds(50))
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        try await waiting.value

        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        let failing = Task { try await wire.ready() }
        try await Task.sleep(for: .milliseconds(50))
        try await channel.close()
        await #expect(throws: WebSocketWireHandler.WireError.self) { try await failing.value }
        #expect(throws: WebSocketWireHandler.WireError.self) { try wire.submit([ByteBuffer(string: "late")], bytes: 4) }
    }

    @Test("bytes handed over off the event loop but not yet written count against the channel: past the bound the writer waits for the event loop")
    func submittedBound() async throws {
        let loopback = try await LoopbackWebSocket.open()
        defer { loopback.close() }
        let wire = loopback.socket.wire
        try await self.holdingEventLoop(of: loopback.socket) {
            // A small frame, counted as the whole bound.
            try wire.submit([WebSocketFraming.text(ByteBuffer(string: "x"))], bytes: WebSocketWireHandler.maxSubmitted)
            #expect(try !wire.readyNow())
        } then: {
        }
        try await loopback.socket.eventLoop.submit {}.get()
        #expect(try wire.readyNow())
    }

    @Test("a batch handed over on the event loop never overtakes one handed over before it from elsewhere")
    func orderAcrossThreads() async throws {
        let loopback = try await LoopbackWebSocket.open()
        defer { loopback.close() }
        let wire = loopback.socket.wire
        // "first" is handed over while the event loop runs something else, which then hands
        // "second" over on the loop: "first" is still on its way, so "second" follows it.
        try await self.holdingEventLoop(of: loopback.socket) {
            try wire.submit([WebSocketFraming.text(ByteBuffer(string: "first"))], bytes: 7)
        } then: {
            try? wire.submit([WebSocketFraming.text(ByteBuffer(string: "second"))], bytes: 8)
        }
        // With nothing on its way, a batch handed over on the loop goes at once.
        try await loopback.socket.eventLoop.submit {
            try wire.submit([WebSocketFraming.text(ByteBuffer(string: "third"))], bytes: 7)
        }.get()
        let deadline = ContinuousClock.now + .seconds(10)
        while loopback.collector.frames.count < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(loopback.collector.frames.map(\.1) == ["first", "second", "third"])
    }

    /// Runs `meanwhile` here while the socket's event loop is held busy by a task of its own,
    /// which runs `then` on the loop once `meanwhile` is done.
    private func holdingEventLoop(
        of socket: UpgradedWebSocket,
        _ meanwhile: () throws -> Void,
        then: @escaping @Sendable () -> Void
    ) async throws {
        let (held, hold) = AsyncStream<Void>.makeStream()
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }  // never leave the shared loop blocked
        socket.eventLoop.execute {
            hold.yield()
            release.wait()
            then()
        }
        var heldIterator = held.makeAsyncIterator()
        await heldIterator.next()
        try meanwhile()
    }
}

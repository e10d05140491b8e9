import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import ServiceKit

@Suite("An upgraded socket read by a channel handler: pings, the close handshake, broken frames, messages waiting for their connection; routes")
struct WebSocketReadHandlerTests {
    private func upgraded(maxMessageBytes: Int = 64) async throws -> (EmbeddedChannel, UpgradedWebSocket) {
        let channel = EmbeddedChannel(handler: WebSocketFrameEncoder())
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        return (channel, try UpgradedWebSocket.install(on: channel, maxMessageBytes: maxMessageBytes))
    }

    /// The server frames written so far, as (opcode, payload).
    private func written(_ channel: EmbeddedChannel) throws -> [(UInt8, [UInt8])] {
        var bytes: [UInt8] = []
        while var buffer = try channel.readOutbound(as: ByteBuffer.self) { bytes += buffer.readBytes(length: buffer.readableBytes) ?? [] }
        var frames: [(UInt8, [UInt8])] = []
        var index = 0
        while index + 2 <= bytes.count {
            let length = Int(bytes[index + 1] & 0x7F)  // the frames here are short
            frames.append((bytes[index] & 0x0F, Array(bytes[(index + 2)..<(index + 2 + length)])))
            index += 2 + length
        }
        return frames
    }

    private func frame(_ opcode: WebSocketOpcode, _ payload: [UInt8] = [], fin: Bool = true, rsv1: Bool = false) -> WebSocketFrame {
        WebSocketFrame(fin: fin, rsv1: rsv1, opcode: opcode, data: ByteBuffer(bytes: payload))
    }

    @Test("a ping is answered with a pong of its payload; a ping that is not one frame closes with 1002")
    func pings() async throws {
        let (channel, _) = try await self.upgraded()
        try channel.writeInbound(self.frame(.ping, [1, 2, 3]))
        #expect(try self.written(channel).map(\.0) == [0xA])
        try channel.writeInbound(self.frame(.ping, [1], fin: false))
        let close = try self.written(channel)
        #expect(close.map(\.0) == [0x8])
        #expect(close.first?.1.prefix(2) == [0x03, 0xEA])  // 1002
    }

    @Test("the client's close is answered with a normal close (1002 for a code no client may send) and the socket closed")
    func clientCloses() async throws {
        for (code, answer) in [(UInt16(1000), [UInt8(0x03), 0xE8]), (1005, [0x03, 0xEA]), (4000, [0x03, 0xE8])] {
            let (channel, _) = try await self.upgraded()
            try channel.writeInbound(self.frame(.connectionClose, [UInt8(code >> 8), UInt8(code & 0xFF)]))
            channel.embeddedEventLoop.run()
            let frames = try self.written(channel)
            #expect(frames.map(\.0) == [0x8])
            #expect(frames.first?.1.prefix(2).map { $0 } == answer)
            #expect(!channel.isActive)
        }
    }

    @Test("the server's close goes out once, with the first reason; data after it is dropped; the client's answer closes the socket")
    func serverCloses() async throws {
        let (channel, socket) = try await self.upgraded()
        try socket.send(text: ByteBuffer(string: "bye"))
        socket.close(.policyViolation, reason: "first")
        socket.close(.goingAway, reason: "second")
        channel.embeddedEventLoop.run()
        let frames = try self.written(channel)
        #expect(frames.map(\.0) == [0x1, 0x8])
        #expect(frames.last.map { Array($0.1.dropFirst(2)) } == Array("first".utf8))
        #expect(channel.isActive)
        try channel.writeInbound(self.frame(.text, Array("late".utf8)))
        try channel.writeInbound(self.frame(.connectionClose, [0x03, 0xE8]))
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
    }

    @Test(
        "broken frames close with their code before a connection serves the socket: reserved bits 1002, a reserved opcode 1002, a lone continuation 1002, bad UTF-8 1007, too large 1009"
    )
    func broken() async throws {
        let cases: [(WebSocketFrame, [UInt8])] = [
            (self.frame(.text, Array("x".utf8), rsv1: true), [0x03, 0xEA]),
            (self.frame(WebSocketOpcode(encodedWebSocketOpcode: 0x3)!, []), [0x03, 0xEA]),
            (self.frame(.continuation, Array("x".utf8)), [0x03, 0xEA]),
            (self.frame(.text, [0xC3, 0x28]), [0x03, 0xEF]),
            (self.frame(.text, Array(repeating: 0x61, count: 65)), [0x03, 0xF1]),
        ]
        for (frame, code) in cases {
            let (channel, _) = try await self.upgraded()
            try channel.writeInbound(frame)
            channel.embeddedEventLoop.run()
            let frames = try self.written(channel)
            #expect(frames.map(\.0) == [0x8])
            #expect(frames.first.map { Array($0.1.prefix(2)) } == code)
        }
    }

    @Test("messages wait for the connection that serves the socket, at most 64: one more closes with 1008")
    func waitingBound() async throws {
        let (channel, _) = try await self.upgraded()
        for _ in 0..<WebSocketReadHandler.maxWaiting { try channel.writeInbound(self.frame(.text, Array("{}".utf8))) }
        #expect(try self.written(channel).isEmpty)
        try channel.writeInbound(self.frame(.text, Array("{}".utf8)))
        channel.embeddedEventLoop.run()
        #expect(try self.written(channel).map { Array($0.1.prefix(2)) } == [[0x03, 0xF0]])
    }

    @Test("a graceful shutdown closes the socket with 1001, once; the client's answer closes it")
    func shutdown() async throws {
        let (channel, _) = try await self.upgraded()
        try channel.writeInbound(self.frame(.text, Array("{}".utf8)))  // waiting, never served
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        channel.embeddedEventLoop.run()
        let frames = try self.written(channel)
        #expect(frames.map(\.0) == [0x8])
        #expect(frames.first.map { Array($0.1.prefix(2)) } == [0x03, 0xE9])
        try channel.writeInbound(self.frame(.connectionClose, [0x03, 0xE8]))
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
    }

    @Test("a client that closes its side without a close frame (a half-close, which the server allows) gets its socket closed")
    func halfClosed() async throws {
        let (channel, _) = try await self.upgraded()
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
    }

    @Test("a route matches its literal segments and takes its parameters; nothing else matches")
    func routes() async throws {
        let authentication = WebSocketAuthentication(verifier: try await ServiceHTTPTests.verifier(), requiring: .streamRead)
        var routes = WebSocketRoutes()
        routes.add("v1/stream", authentication: authentication) { _, _ in }
        routes.add("v1/terminal/sessions/:sessionId/attach", authentication: authentication) { _, _ in }
        #expect(routes.match("/v1/stream")?.0.path == "v1/stream")
        #expect(routes.match("/v1/terminal/sessions/host-1:main/attach")?.1 == ["sessionId": "host-1:main"])
        #expect(routes.match("/v1/stream/more") == nil)
        #expect(routes.match("/v1/terminal/sessions/attach") == nil)
        #expect(routes.match("/") == nil)
    }
}

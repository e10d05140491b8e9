import Contracts
import Foundation
import HummingbirdTesting
import HummingbirdWSClient
import HummingbirdWSCompression
import Logging
import NIOCore
import NIOPosix
import ServiceHarnesses
import StreamTestSupport
import Synchronization
import TestSupport
import Testing

@testable import ServiceKit
@testable import StreamFanout

/// A client's side of a WebSocket on a raw TCP connection: the upgrade as written, frames as
/// they come (reserved bits and all), masked frames sent by hand, compressed or not.
struct RawWebSocketClient {
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    let input: Input

    final class Input {
        var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
        var buffer = ByteBuffer()

        init(_ iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) {
            self.iterator = iterator
        }

        /// At least `count` bytes buffered, or false once the socket has closed.
        func fill(_ count: Int) async throws -> Bool {
            while self.buffer.readableBytes < count {
                guard var more = try await self.iterator.next() else { return false }
                self.buffer.writeBuffer(&more)
            }
            return true
        }
    }

    /// Connects to `port` on loopback and runs `body` with the client; closes after.
    static func with(port: Int, _ body: (RawWebSocketClient) async throws -> Void) async throws {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port) { channel in
            channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
        }
        try await channel.executeThenClose { inbound, outbound in
            try await body(RawWebSocketClient(outbound: outbound, input: Input(inbound.makeAsyncIterator())))
        }
    }

    struct Frame {
        var rsv1: Bool
        var opcode: UInt8
        var payload: ByteBuffer
    }

    /// Sends the upgrade and reads the answer's head.
    func upgrade(token: String, extensions: String?) async throws -> String {
        let input = self.input
        var request = "GET /v1/stream?protocol=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer \(token)\r\n"
        if let extensions { request += "Sec-WebSocket-Extensions: \(extensions)\r\n" }
        try await self.outbound.write(ByteBuffer(string: request + "\r\n"))
        while true {
            let text = String(buffer: input.buffer)
            if let end = text.range(of: "\r\n\r\n") {
                input.buffer.moveReaderIndex(forwardBy: text[..<end.upperBound].utf8.count)
                return String(text[..<end.lowerBound])
            }
            guard try await input.fill(input.buffer.readableBytes + 1) else { return text }
        }
    }

    /// A masked text frame, its first reserved bit set when `compressed`.
    func send(_ payload: ByteBuffer, compressed: Bool = false) async throws {
        var frame = ByteBuffer()
        frame.writeInteger(UInt8(0x81 | (compressed ? 0x40 : 0)))
        let length = payload.readableBytes
        if length < 126 {
            frame.writeInteger(UInt8(0x80 | length))
        } else if length <= 0xFFFF {
            frame.writeInteger(UInt8(0x80 | 126))
            frame.writeInteger(UInt16(length))
        } else {
            frame.writeInteger(UInt8(0x80 | 127))
            frame.writeInteger(UInt64(length))
        }
        let mask: [UInt8] = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame.writeBytes(mask)
        frame.writeBytes(payload.readableBytesView.enumerated().map { $0.element ^ mask[$0.offset % 4] })
        try await self.outbound.write(frame)
    }

    /// Reads until the server's close frame: its code, or nil when the socket closed without one.
    func closeCode() async throws -> UInt16? {
        while let frame = try await self.next() {
            if frame.opcode == 0x8 { return frame.payload.getInteger(at: frame.payload.readerIndex, as: UInt16.self) }
        }
        return nil
    }

    /// The next frame from the server, or nil once the socket has closed.
    func next() async throws -> Frame? {
        let input = self.input
        guard try await input.fill(2) else { return nil }
        let first = input.buffer.getInteger(at: input.buffer.readerIndex, as: UInt8.self)!
        let second = input.buffer.getInteger(at: input.buffer.readerIndex + 1, as: UInt8.self)!
        var header = 2
        var length = Int(second & 0x7F)
        if length == 126 {
            guard try await input.fill(4) else { return nil }
            length = Int(input.buffer.getInteger(at: input.buffer.readerIndex + 2, as: UInt16.self)!)
            header = 4
        } else if length == 127 {
            guard try await input.fill(10) else { return nil }
            length = Int(input.buffer.getInteger(at: input.buffer.readerIndex + 2, as: UInt64.self)!)
            header = 10
        }
        guard try await input.fill(header + length) else { return nil }
        input.buffer.moveReaderIndex(forwardBy: header)
        let payload = input.buffer.readSlice(length: length)!
        return Frame(rsv1: first & 0x40 != 0, opcode: first & 0x0F, payload: payload)
    }
}

@Suite("Stream-fanout's WebSocket compression (permessage-deflate, RFC 7692), live NATS + Postgres")
struct StreamCompressionTests {
    static func logs(_ range: Range<Int>) -> [[String: Any]] {
        range.map { logEvent("z\($0)", message: "event \($0): " + String(repeating: "the same long words, ", count: 12)) }
    }

    /// `payload` as a client compresses one message (TestSupport's ``ClientDeflate``).
    static func deflate(_ payload: ByteBuffer) throws -> ByteBuffer {
        try ClientDeflate().compress(payload)
    }

    @Test("offered, it is agreed; events replayed and live arrive compressed on the wire and whole once inflated; a compressed subscribe is read")
    func onTheWire() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            try await harness.post(ingest, key: key, Self.logs(1..<6))
            try await harness.fanout().test(.live) { fanout in
                try await RawWebSocketClient.with(port: try #require(fanout.port)) { client in
                    let head = try await client.upgrade(token: try await harness.token(), extensions: "permessage-deflate; client_max_window_bits")
                    #expect(head.hasPrefix("HTTP/1.1 101"), "\(head)")
                    #expect(head.lowercased().contains("sec-websocket-extensions: permessage-deflate; server_no_context_takeover"), "\(head)")
                    // The subscribe is compressed too (padded past the size worth compressing).
                    let subscribe = ByteBuffer(string: StreamTestSupport.subscribe(lastEventId: 0, requestID: String(repeating: "r", count: 120)))
                    try await client.send(try Self.deflate(subscribe), compressed: true)
                    let inflater = try WebSocketDeflate.Inflater(.init(response: "", clientNoContextTakeover: true))
                    var frames: [[String: Any]] = []
                    var compressed = 0
                    var posted = false
                    while let frame = try await client.next() {
                        guard frame.opcode == 0x1 else { continue }  // pings
                        var payload = frame.payload
                        if frame.rsv1 {
                            compressed += 1
                            guard case .message(let inflated) = inflater.inflate(frame.payload, limit: 1 << 20) else {
                                Issue.record("a compressed frame did not inflate")
                                break
                            }
                            payload = inflated
                        }
                        let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer: payload)) as? [String: Any])
                        if object["type"] as? String == "subscribed", !posted {
                            posted = true
                            try await harness.post(ingest, key: key, Self.logs(6..<11))
                        }
                        guard object["seq"] != nil else { continue }
                        frames.append(object)
                        if object["seq"] as? Int == 10 { break }
                    }
                    #expect(frames.map { $0["seq"] as? Int } == Array(1...10).map { $0 })
                    #expect(frames.map { $0["message"] as? String } == Self.logs(1..<11).map { $0["message"] as? String })
                    // Every event is long enough to be worth compressing: all ten came compressed.
                    #expect(compressed >= 10)
                }
            }
        }
    }

    @Test("an offer the server cannot take, or none, gets no compression; a compressed frame then is a protocol error")
    func declined() async throws {
        let harness = try await FanoutHarness()
        try await harness.fanout().test(.live) { fanout in
            for offer in [nil, "permessage-deflate; server_max_window_bits=9", "x-webkit-deflate-frame"] {
                try await RawWebSocketClient.with(port: try #require(fanout.port)) { client in
                    let head = try await client.upgrade(token: try await harness.token(), extensions: offer)
                    #expect(head.hasPrefix("HTTP/1.1 101") && !head.lowercased().contains("sec-websocket-extensions"), "\(head)")
                    try await client.send(try Self.deflate(ByteBuffer(string: StreamTestSupport.subscribe())), compressed: true)
                    #expect(try await client.closeCode() == 1002, "\(String(describing: offer))")
                }
            }
        }
    }

    @Test("a compressed message that inflates past the connection's limit (16 MiB of spaces in 16 KiB) closes it with 1009")
    func bomb() async throws {
        let harness = try await FanoutHarness()
        try await harness.fanout().test(.live) { fanout in
            try await RawWebSocketClient.with(port: try #require(fanout.port)) { client in
                let head = try await client.upgrade(token: try await harness.token(), extensions: "permessage-deflate")
                #expect(head.lowercased().contains("permessage-deflate"))
                // Well under the frame limit as sent (64 KiB): refused for what it inflates to.
                let bomb = try Self.deflate(ByteBuffer(repeating: 0x20, count: 16 << 20))
                #expect(bomb.readableBytes < 32 << 10)
                try await client.send(bomb, compressed: true)
                #expect(try await client.closeCode() == 1009)
            }
        }
    }

    @Test("another implementation (swift-websocket's permessage-deflate client) subscribes compressed and reads every event")
    func interoperates() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            try await harness.post(ingest, key: key, Self.logs(1..<6))
            try await harness.fanout().test(.live) { fanout in
                let port = try #require(fanout.port)
                var configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 20, extensions: [.perMessageDeflate(minFrameSizeToCompress: 64)])
                configuration.additionalHeaders[.authorization] = "Bearer \(try await harness.token())"
                let seen = Mutex<[(seq: Int?, message: String?)]>([])
                let posted = Mutex(false)
                // Padded so the client compresses it (it compresses frames of 64 bytes or more).
                let subscribe = StreamTestSupport.subscribe(lastEventId: 0, requestID: String(repeating: "q", count: 100))
                try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(port)/v1/stream?protocol=1",
                    configuration: configuration,
                    logger: Logger(label: "deflate-client")
                ) {
                    inbound,
                    outbound,
                    _ in
                    try await outbound.write(.text(subscribe))
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message,
                            let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                        else { continue }
                        if object["type"] as? String == "subscribed", posted.withLock({ !$0 }) {
                            posted.withLock { $0 = true }
                            try await harness.post(ingest, key: key, Self.logs(6..<11))
                        }
                        guard object["seq"] != nil else { continue }
                        let entry = (object["seq"] as? Int, object["message"] as? String)
                        seen.withLock { $0.append(entry) }
                        if object["seq"] as? Int == 10 { break }
                    }
                }
                let frames = seen.withLock { $0 }
                #expect(frames.map(\.seq) == Array(1...10).map { $0 })
                #expect(frames.map(\.message) == Self.logs(1..<11).map { $0["message"] as? String })
            }
        }
    }
}

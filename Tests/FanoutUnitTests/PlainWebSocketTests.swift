import Foundation
import NIOCore
import NIOPosix
import PlainWebSocket
import StreamTestSupport
import Synchronization
import Testing

/// The tests' WebSocket client (StreamTestSupport) against a server that speaks first and hangs
/// up at once: its 101, its frames and a close in one write or two, then the end of the
/// connection.
/// HummingbirdWSClient lost such frames (a fanout test timed out waiting for them in CI).
@Suite("The tests' WebSocket client: what a server sends with its 101 and then closes is read")
struct PlainWebSocketTests {
    /// Answers each upgrade with 101 + three messages + a close frame (1002), optionally in two
    /// writes, then closes.
    final class SpeakFirstHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let split: Bool
        let head = Mutex(ByteBuffer())
        init(split: Bool) { self.split = split }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = Self.unwrapInboundIn(data)
            let request: String? = self.head.withLock { head in
                head.writeBuffer(&bytes)
                let text = String(buffer: head)
                return text.contains("\r\n\r\n") ? text : nil
            }
            guard let request else { return }
            let key =
                request.split(separator: "\r\n").first { $0.lowercased().hasPrefix("sec-websocket-key:") }
                .map { $0.drop { $0 != ":" }.dropFirst().trimmingCharacters(in: .whitespaces) } ?? ""
            let accept = PlainWebSocket.acceptValue(for: key)
            let response = ByteBuffer(
                string: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n\r\n"
            )
            var frames = ByteBuffer()
            let text = #"{"error":{"code":"ProtocolMismatch"}}"#
            frames.writeBytes([0x81, UInt8(text.utf8.count)])
            frames.writeString(text)
            // A message in two fragments with a ping between them, then one of 200 bytes (a
            // 16-bit length).
            frames.writeBytes([0x01, 0x02] + Array("ab".utf8) + [0x89, 0x00] + [0x80, 0x02] + Array("cd".utf8))
            frames.writeBytes([0x81, 126, 0x00, 200] + Array(repeating: UInt8(ascii: "x"), count: 200))
            frames.writeBytes([0x88, 0x02, 0x03, 0xEA])
            if self.split {
                context.writeAndFlush(Self.wrapOutboundOut(response), promise: nil)
                context.writeAndFlush(Self.wrapOutboundOut(frames), promise: nil)
            } else {
                var both = response
                both.writeBuffer(&frames)
                context.writeAndFlush(Self.wrapOutboundOut(both), promise: nil)
            }
            context.close(promise: nil)
        }
    }

    @Test(
        "100 connections, the 101 and the frames in one write or two: each gets the three messages whole and the close 1002",
        arguments: [false, true]
    )
    func speakFirstThenClose(split: Bool) async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(SpeakFirstHandler(split: split)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        let port = try #require(server.localAddress?.port)
        for _ in 0..<100 {
            let texts = Mutex<[String]>([])
            let close = try await PlainWebSocket.connect(url: "ws://127.0.0.1:\(port)/v1/stream?protocol=2") { inbound, _ in
                for try await message in inbound {
                    if case .text(let text) = message { texts.withLock { $0.append(text) } }
                }
            }
            #expect(texts.withLock { $0 } == [#"{"error":{"code":"ProtocolMismatch"}}"#, "abcd", String(repeating: "x", count: 200)])
            #expect(close?.closeCode == .protocolError)
        }
    }
}

import Logging
import NIOCore
import NIOPosix
import NIOWebSocket
import Synchronization

@testable import ServiceKit

/// A real TCP connection on loopback whose server side is an upgraded WebSocket (its frame
/// encoder, read handler and wire installed once the socket is active, as after an upgrade),
/// and whose client side collects the bytes it reads. For what the server writes: it has no
/// frame decoder, so the client sends nothing.
struct LoopbackWebSocket {
    let socket: UpgradedWebSocket
    let collector: Collector
    private let server: any Channel
    private let client: any Channel

    static func open() async throws -> LoopbackWebSocket {
        let group = MultiThreadedEventLoopGroup.singleton
        let (sockets, accepted) = AsyncThrowingStream<UpgradedWebSocket, any Error>.makeStream()
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(UpgradeWhenActive(accepted: accepted))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let collector = Collector()
        let client = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(collector) }
            }
            .connect(host: "127.0.0.1", port: server.localAddress!.port!).get()
        var iterator = sockets.makeAsyncIterator()
        guard let socket = try await iterator.next() else { throw ChannelError.ioOnClosedChannel }
        return LoopbackWebSocket(socket: socket, collector: collector, server: server, client: client)
    }

    func close() {
        self.client.close(promise: nil)
        self.server.close(promise: nil)
    }

    private final class UpgradeWhenActive: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let accepted: AsyncThrowingStream<UpgradedWebSocket, any Error>.Continuation

        init(accepted: AsyncThrowingStream<UpgradedWebSocket, any Error>.Continuation) {
            self.accepted = accepted
        }

        func channelActive(context: ChannelHandlerContext) {
            context.fireChannelActive()
            let channel = context.channel
            self.accepted.yield(
                with: Result {
                    try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder())
                    return try UpgradedWebSocket.install(on: channel, maxMessageBytes: 1024)
                }
            )
        }
    }
}

/// Collects what a client socket reads.
final class Collector: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let bytes = Mutex<[UInt8]>([])

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = self.unwrapInboundIn(data)
        let read = buffer.readBytes(length: buffer.readableBytes) ?? []
        self.bytes.withLock { $0 += read }
    }

    /// The server frames read so far, as (opcode, payload text); short frames only.
    var frames: [(UInt8, String)] {
        let bytes = self.bytes.withLock { $0 }
        var frames: [(UInt8, String)] = []
        var index = 0
        while index + 2 <= bytes.count {
            let length = Int(bytes[index + 1] & 0x7F)
            guard index + 2 + length <= bytes.count else { break }
            frames.append((bytes[index] & 0x0F, String(decoding: bytes[(index + 2)..<(index + 2 + length)], as: UTF8.self)))
            index += 2 + length
        }
        return frames
    }
}

extension WebSocketConnection {
    /// A connection with small limits and slow timers, for a test's writer.
    static func forTests() -> WebSocketConnection {
        let limits = WebSocketLimits(
            maxMessageBytes: 1024,
            maxMessagesPer10Seconds: 100,
            pingInterval: .seconds(30),
            liveness: .pingFrames,
            stalledAfter: .seconds(30)
        )
        return WebSocketConnection(limits: limits, heartbeats: WebSocketHeartbeats(), logger: Logger(label: "test"))
    }
}

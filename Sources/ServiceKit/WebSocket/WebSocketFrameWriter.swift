import HummingbirdWebSocket
public import NIOCore
import NIOWebSocket
import Synchronization

/// The one writer of a connection: text messages and ping frames. The first message of a batch
/// goes out at once; the messages written after it share one flush, when the protocol says its
/// batch of ready messages is done (``endBatch()``) or the batch has grown to ``maxBatchBytes``.
public final class WebSocketFrameWriter: Sendable {
    /// Bytes written under one flush at most.
    public static let maxBatchBytes = 32 << 10

    let outbound: WebSocketOutboundWriter
    let connection: WebSocketConnection
    let batcher: FlushBatcher?
    /// Bytes written in the open batch.
    private let batchBytes = Mutex(0)

    init(outbound: WebSocketOutboundWriter, connection: WebSocketConnection, batcher: FlushBatcher?) {
        self.outbound = outbound
        self.connection = connection
        self.batcher = batcher
    }

    /// Writes one text message; flushed at the end of the batch.
    public func send(_ message: ByteBuffer) async throws {
        try await self.write(WebSocketFrame(fin: true, opcode: .text, data: message))
    }

    /// Writes a WebSocket ping frame.
    public func ping() async throws {
        try await self.write(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer()))
    }

    /// The protocol has nothing more at hand: flush what the batch holds.
    public func endBatch() {
        self.batchBytes.withLock { $0 = 0 }
        self.batcher?.release()
    }

    private func write(_ frame: WebSocketFrame) async throws {
        let size = frame.data.readableBytes
        // The first message of a batch is flushed as usual (a lone message waits for nothing);
        // those that follow it before `endBatch()` share one flush.
        let (first, full) = self.batchBytes.withLock { bytes in
            defer { bytes += size }
            return (bytes == 0, bytes + size >= Self.maxBatchBytes)
        }
        if !first { self.batcher?.hold() }
        self.connection.writeStarted()
        try await self.outbound.write(.custom(frame))
        self.connection.writeEnded()
        if full { self.endBatch() }
    }
}

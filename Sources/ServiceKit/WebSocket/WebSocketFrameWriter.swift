public import NIOCore

/// The one writer of a connection, used by its writer task only: text messages and ping frames,
/// framed here and written straight to the channel (no actor, no async writer, no frame
/// encoder on the way).
///
/// What is written collects into a batch that goes to the socket in one flush when the protocol
/// says nothing more is ready (``endBatch()``) or the batch reaches ``maxBatchBytes``. A protocol
/// calls `endBatch()` before any wait that is not a write (a database read, its queue), so
/// nothing written waits on it. A write waits only while the channel is full; a socket that
/// takes nothing for the stall time is closed under it.
public final class WebSocketFrameWriter {
    /// Bytes handed to the socket in one flush at most.
    public static let maxBatchBytes = 64 << 10

    private let wire: WebSocketWireHandler
    private let connection: WebSocketConnection
    private var frames: [ByteBuffer] = []
    private var bytes = 0
    /// The batch's frame headers, written one after another; each frame's is a slice of it.
    private var headers = ByteBuffer()

    init(wire: WebSocketWireHandler, connection: WebSocketConnection) {
        self.wire = wire
        self.connection = connection
    }

    /// Writes one text message.
    public func send(_ message: ByteBuffer) async throws {
        try await self.add(.text, message)
    }

    /// Writes one whole frame built by ``WebSocketFraming`` (shared by every connection that
    /// writes it; never copied).
    public func send(framed frame: ByteBuffer) async throws {
        try await self.waitIfFull()
        self.frames.append(frame)
        self.bytes += frame.readableBytes
        if self.bytes >= Self.maxBatchBytes { try self.submit() }
    }

    /// Writes a WebSocket ping frame.
    public func ping() async throws {
        try await self.add(.ping, ByteBuffer())
    }

    /// The protocol has nothing more at hand: hand the batch to the socket.
    public func endBatch() {
        try? self.submit()
    }

    private func add(_ opcode: WebSocketFraming.Opcode, _ payload: ByteBuffer) async throws {
        try await self.waitIfFull()
        let start = self.headers.writerIndex
        let length = WebSocketFraming.writeHeader(opcode, payload: payload.readableBytes, into: &self.headers)
        self.frames.append(self.headers.getSlice(at: start, length: length)!)
        self.bytes += length
        if payload.readableBytes > 0 {
            self.frames.append(payload)
            self.bytes += payload.readableBytes
        }
        if self.bytes >= Self.maxBatchBytes { try self.submit() }
    }

    /// At the start of a batch, waits while the channel is full (the stall check watches).
    private func waitIfFull() async throws {
        guard self.frames.isEmpty, try !self.wire.readyNow() else { return }
        self.connection.writeStarted()
        defer { self.connection.writeEnded() }
        try await self.wire.ready()
    }

    private func submit() throws {
        guard !self.frames.isEmpty else { return }
        // The arrays went to the event loop: the next batch starts new ones (an idle
        // connection holds none).
        defer {
            self.frames = []
            self.bytes = 0
            self.headers = ByteBuffer()
        }
        try self.wire.submit(self.frames, bytes: self.bytes)
    }
}

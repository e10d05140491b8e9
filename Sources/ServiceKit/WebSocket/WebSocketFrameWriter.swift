public import NIOCore

/// The one writer of a connection, used by one writer run at a time: text messages and ping
/// frames, framed here and written straight to the channel (no actor, no async writer, no frame
/// encoder on the way).
///
/// What is written collects into a batch that goes to the socket in one flush when the protocol
/// says nothing more is ready (``endBatch()``) or the batch reaches ``maxBatchBytes``. A protocol
/// calls `endBatch()` before any wait that is not a write (a database read, its queue), so
/// nothing written waits on it. The `send` methods wait while the channel is full (a socket that
/// takes nothing for the stall time is closed under them); the `append` methods never wait, for
/// a writer that runs on the event loop and asks ``isReady()`` first (as the `send` methods
/// wait, at the start of each batch). On the socket's event loop a batch is written into the
/// channel at once, elsewhere with one `execute`.
public final class WebSocketFrameWriter {
    /// Bytes handed to the socket in one flush at most.
    public static let maxBatchBytes = 64 << 10
    /// Payloads up to this size are copied beside their header (one buffer for a run of small
    /// frames); larger ones are written as they are.
    static let maxCopiedPayload = 1024

    /// A run of bytes of ``inline``, or a buffer written as it is.
    private enum Piece {
        case inline(at: Int, length: Int)
        case shared(ByteBuffer)
    }

    private let wire: WebSocketWireHandler
    private let connection: WebSocketConnection
    /// The client agreed to `permessage-deflate`: messages are compressed when that makes them
    /// smaller (``WebSocketDeflate``), and a frame shared by many connections should be its
    /// compressed form (``WebSocketDeflate/frame(_:_:)``).
    public let compresses: Bool
    private var pieces: [Piece] = []
    /// The batch's headers and small payloads, back to back; sliced only when the batch goes.
    private var inline = ByteBuffer()
    private var bytes = 0

    init(wire: WebSocketWireHandler, connection: WebSocketConnection, compresses: Bool = false) {
        self.wire = wire
        self.connection = connection
        self.compresses = compresses
    }

    /// Writes one text message.
    public func send(_ message: ByteBuffer) async throws {
        try await self.ready()
        try self.append(message)
    }

    /// Writes one whole frame built by ``WebSocketFraming`` (framed once, shared by every
    /// connection that writes it).
    public func send(framed frame: ByteBuffer) async throws {
        try await self.ready()
        try self.append(framed: frame)
    }

    /// Writes a WebSocket ping frame.
    public func ping() async throws {
        try await self.ready()
        try self.appendPing()
    }

    /// The protocol has nothing more at hand: hand the batch to the socket.
    public func endBatch() {
        try? self.submit()
    }

    /// Whether the next write can go without waiting: a batch is open, or the channel can take
    /// a new one (below its high-water mark, and not too much on its way to it). Throws once
    /// the channel is closed.
    public func isReady() throws -> Bool {
        try !self.pieces.isEmpty || self.wire.readyNow()
    }

    /// Returns when ``isReady()`` would be true, waiting while the channel is full (the stall
    /// check watches the wait).
    public func ready() async throws {
        guard try !self.isReady() else { return }
        self.connection.writeStarted()
        defer { self.connection.writeEnded() }
        try await self.wire.ready()
    }

    /// Adds one text message to the batch, without waiting.
    public func append(_ message: ByteBuffer) throws {
        try self.add(.text, message)
    }

    /// Adds one whole frame built by ``WebSocketFraming`` to the batch, without waiting. A small
    /// one is copied into the batch's buffer beside the frames before it, as nats-server copies
    /// a message into its client's buffer: a batch of small events is then one write to the
    /// channel, not one per event (each of which costs the channel's bookkeeping, and a queue
    /// whose capacity the channel keeps).
    public func append(framed frame: ByteBuffer) throws {
        if frame.readableBytes <= Self.maxCopiedPayload {
            self.appendInline { $0.writeImmutableBuffer(frame) }
        } else {
            self.pieces.append(.shared(frame))
            self.bytes += frame.readableBytes
        }
        if self.bytes >= Self.maxBatchBytes { try self.submit() }
    }

    /// Adds a WebSocket ping frame to the batch, without waiting.
    public func appendPing() throws {
        try self.add(.ping, ByteBuffer())
    }

    private func add(_ opcode: WebSocketFraming.Opcode, _ message: ByteBuffer) throws {
        var payload = message
        var compressed = false
        if self.compresses, opcode != .ping, let deflated = WebSocketDeflate.compress(message) {
            payload = deflated
            compressed = true
        }
        let copied = payload.readableBytes <= Self.maxCopiedPayload
        self.appendInline { inline in
            let header = WebSocketFraming.writeHeader(opcode, payload: payload.readableBytes, compressed: compressed, into: &inline)
            return copied ? header + inline.writeImmutableBuffer(payload) : header
        }
        if !copied {
            self.pieces.append(.shared(payload))
            self.bytes += payload.readableBytes
        }
        if self.bytes >= Self.maxBatchBytes { try self.submit() }
    }

    /// Appends what `write` writes to the batch's buffer (it returns how many bytes), as part of
    /// the run of inline bytes before it when there is one.
    private func appendInline(_ write: (inout ByteBuffer) -> Int) {
        let start = self.inline.writerIndex
        let length = write(&self.inline)
        if case .inline(let at, let before)? = self.pieces.last, at + before == start {
            self.pieces[self.pieces.count - 1] = .inline(at: at, length: before + length)
        } else {
            self.pieces.append(.inline(at: start, length: length))
        }
        self.bytes += length
    }

    private func submit() throws {
        guard !self.pieces.isEmpty else { return }
        let frames = self.pieces.map { piece in
            switch piece {
            case .inline(let at, let length): self.inline.getSlice(at: at, length: length)!
            case .shared(let buffer): buffer
            }
        }
        let bytes = self.bytes
        // Handed to the event loop: the next batch starts new buffers (an idle connection holds
        // none).
        self.pieces = []
        self.inline = ByteBuffer()
        self.bytes = 0
        try self.wire.submit(frames, bytes: bytes)
    }
}

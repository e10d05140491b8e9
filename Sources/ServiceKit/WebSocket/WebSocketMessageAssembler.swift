public import NIOCore

/// A client message, assembled from its frames.
public enum WebSocketClientMessage: Sendable, Equatable {
    case text(String)
    case binary(ByteBuffer)
}

/// Assembles a client's data frames into messages within a size budget. Pure: fed frames, it
/// answers what each completes.
public struct WebSocketMessageAssembler: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// The frame continues a message that is not complete yet.
        case partial
        case message(WebSocketClientMessage)
        /// A complete `permessage-deflate` message, still compressed: its payload, and whether
        /// it is text (``message(text:_:)`` makes it a message once inflated).
        case compressed(text: Bool, ByteBuffer)
        /// The message has grown past the budget: close with 1009.
        case tooLarge
        /// A continuation with no message begun, or a new message before the last one ended:
        /// close with 1002.
        case outOfOrder
        /// A text message that is not UTF-8: close with 1007.
        case notUTF8
    }

    /// The opcodes of data frames.
    public enum Opcode: Sendable {
        case text
        case binary
        case continuation
    }

    public var maxBytes: Int
    private var pending: ByteBuffer?
    private var pendingIsText = false
    private var pendingIsCompressed = false

    public init(maxBytes: Int) {
        self.maxBytes = maxBytes
    }

    /// Adds a data frame; `compressed` is the first frame's first reserved bit (a compressed
    /// message's payload counts against the budget as it came, and once inflated).
    public mutating func add(opcode: Opcode, data: ByteBuffer, fin: Bool, compressed: Bool = false) -> Outcome {
        switch opcode {
        case .text, .binary:
            guard self.pending == nil else { return .outOfOrder }
            guard data.readableBytes <= self.maxBytes else { return .tooLarge }
            self.pendingIsText = opcode == .text
            self.pendingIsCompressed = compressed
            self.pending = data
        case .continuation:
            guard var pending = self.pending else { return .outOfOrder }
            self.pending = nil  // no second reference while it grows
            guard pending.readableBytes + data.readableBytes <= self.maxBytes else { return .tooLarge }
            var data = data
            pending.writeBuffer(&data)
            self.pending = pending
        }
        guard fin, let complete = self.pending else { return .partial }
        self.pending = nil
        if self.pendingIsCompressed { return .compressed(text: self.pendingIsText, complete) }
        return Self.message(text: self.pendingIsText, complete)
    }

    /// A complete message's payload as a message: text must be UTF-8.
    public static func message(text: Bool, _ payload: ByteBuffer) -> Outcome {
        guard text else { return .message(.binary(payload)) }
        guard let text = String(validating: payload.readableBytesView, as: UTF8.self) else { return .notUTF8 }
        return .message(.text(text))
    }
}

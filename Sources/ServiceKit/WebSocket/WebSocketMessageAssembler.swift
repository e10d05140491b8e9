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

    public init(maxBytes: Int) {
        self.maxBytes = maxBytes
    }

    public mutating func add(opcode: Opcode, data: ByteBuffer, fin: Bool) -> Outcome {
        switch opcode {
        case .text, .binary:
            guard self.pending == nil else { return .outOfOrder }
            guard data.readableBytes <= self.maxBytes else { return .tooLarge }
            self.pendingIsText = opcode == .text
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
        guard self.pendingIsText else { return .message(.binary(complete)) }
        guard let text = String(validating: complete.readableBytesView, as: UTF8.self) else { return .notUTF8 }
        return .message(.text(text))
    }
}

/// A message delivered by a JetStream consumer, to be acknowledged.
public struct JetStreamMessage: Sendable {
    /// Where the message was delivered from, parsed from its acknowledgement subject.
    public struct Metadata: Sendable, Hashable {
        public var stream: String
        public var consumer: String
        /// 1 on first delivery, more on redelivery.
        public var deliveryCount: Int
        public var streamSequence: UInt64
        public var consumerSequence: UInt64
        /// Messages still pending for the consumer after this one.
        public var pending: UInt64
    }

    /// The subject it was published on.
    public let subject: String
    public let headers: NATSHeaders
    public let payload: [UInt8]
    /// Parsed from the reply subject; `nil` if the server sent an unknown format.
    public let metadata: Metadata?
    /// The subject acknowledgements go to (`$JS.ACK.<stream>.<consumer>.…`): with it, any
    /// connection can acknowledge the message (control-api hands it to agents as their ack token).
    public let replySubject: String?
    private let connection: NATSConnection

    init(_ message: NATSMessage, connection: NATSConnection) {
        self.subject = message.subject
        self.headers = message.headers
        self.payload = message.payload
        self.replySubject = message.reply
        self.metadata = message.reply.flatMap(Self.parse)
        self.connection = connection
    }

    /// Done with it: it will not be delivered again.
    public func ack() throws {
        try self.reply("+ACK")
    }

    /// Not handled: deliver it again, after `delay` if given.
    public func nak(delay: Duration? = nil) throws {
        if let delay {
            try self.reply(#"-NAK {"delay":\#(delay.nanoseconds)}"#)
        } else {
            try self.reply("-NAK")
        }
    }

    /// Never deliver it again, not handled (a poison message).
    public func term() throws {
        try self.reply("+TERM")
    }

    /// Still working on it: restart its ack wait.
    public func inProgress() throws {
        try self.reply("+WPI")
    }

    private func reply(_ text: String) throws {
        guard let replySubject else {
            throw ServiceKitError(.jetStream, "message on \(self.subject) has no acknowledgement subject")
        }
        try self.connection.publish(Array(text.utf8), to: replySubject)
    }

    /// `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>`, or the v2 form
    /// with `<domain>.<account hash>` after `$JS.ACK` and a random token at the end.
    /// The metadata an acknowledgement subject (`$JS.ACK.…`) carries, or nil if it is not one.
    public static func parse(_ reply: String) -> Metadata? {
        let tokens = reply.split(separator: ".", omittingEmptySubsequences: false)
        guard tokens.count >= 9, tokens[0] == "$JS", tokens[1] == "ACK" else { return nil }
        let base = tokens.count == 9 ? 2 : 4
        guard tokens.count >= base + 7,
            let delivered = Int(tokens[base + 2]),
            let streamSequence = UInt64(tokens[base + 3]),
            let consumerSequence = UInt64(tokens[base + 4]),
            let pending = UInt64(tokens[base + 6])
        else { return nil }
        return Metadata(
            stream: String(tokens[base]),
            consumer: String(tokens[base + 1]),
            deliveryCount: delivered,
            streamSequence: streamSequence,
            consumerSequence: consumerSequence,
            pending: pending
        )
    }
}

/// The configuration of a JetStream stream (the fields Swarmdeck uses).
public struct StreamConfiguration: Codable, Sendable, Hashable {
    public enum Retention: String, Codable, Sendable { case limits, interest, workqueue }
    public enum Storage: String, Codable, Sendable { case file, memory }
    /// What a full stream does: drops its oldest messages, or refuses new ones.
    public enum Discard: String, Codable, Sendable { case old, new }

    public var name: String
    public var subjects: [String]
    public var retention: Retention
    public var storage: Storage
    public var maxMessages: Int64
    public var maxBytes: Int64
    /// Messages kept per subject (the oldest of that subject go first); -1 = no limit.
    public var maxMessagesPerSubject: Int64
    /// Nanoseconds; 0 = forever.
    public var maxAge: Int64
    /// The de-duplication window for `Nats-Msg-Id`, nanoseconds.
    public var duplicateWindow: Int64
    /// Set by ``JetStream/createOrUpdateStream(_:)`` from the handle's ``JetStream/streamReplicas``.
    public var replicas: Int
    /// The largest message the stream takes (a larger publish is refused); nil = no limit.
    public var maxMessageSize: Int64?
    /// What the stream does once full; nil = the server's default (old).
    public var discard: Discard?

    enum CodingKeys: String, CodingKey {
        case name, subjects, retention, storage, discard
        case replicas = "num_replicas"
        case maxMessages = "max_msgs"
        case maxBytes = "max_bytes"
        case maxMessagesPerSubject = "max_msgs_per_subject"
        case maxAge = "max_age"
        case duplicateWindow = "duplicate_window"
        case maxMessageSize = "max_msg_size"
    }

    public init(
        name: String,
        subjects: [String],
        retention: Retention = .limits,
        storage: Storage = .file,
        maxMessages: Int64 = -1,
        maxBytes: Int64 = -1,
        maxMessagesPerSubject: Int64 = -1,
        maxAge: Duration = .zero,
        duplicateWindow: Duration = .seconds(120),
        maxMessageSize: Int64? = nil,
        discard: Discard? = nil
    ) {
        self.name = name
        self.subjects = subjects
        self.retention = retention
        self.storage = storage
        self.maxMessages = maxMessages
        self.maxBytes = maxBytes
        self.maxMessagesPerSubject = maxMessagesPerSubject
        self.maxAge = maxAge.nanoseconds
        self.duplicateWindow = duplicateWindow.nanoseconds
        self.replicas = 1
        self.maxMessageSize = maxMessageSize
        self.discard = discard
    }
}

/// The configuration of a durable pull consumer with explicit acknowledgement.
public struct ConsumerConfiguration: Codable, Sendable, Hashable {
    public var durableName: String
    public var filterSubject: String?
    public var ackPolicy: String = "explicit"
    public var deliverPolicy: String = "all"
    /// Nanoseconds a delivered message may stay unacknowledged before redelivery.
    public var ackWait: Int64
    /// Deliveries before the server gives up on a message; -1 = unlimited.
    public var maxDeliver: Int
    /// Unacknowledged messages outstanding at once.
    public var maxAckPending: Int
    /// Nanoseconds without a pull after which the server deletes the consumer; nil = never.
    public var inactiveThreshold: Int64?

    enum CodingKeys: String, CodingKey {
        case durableName = "durable_name"
        case filterSubject = "filter_subject"
        case ackPolicy = "ack_policy"
        case deliverPolicy = "deliver_policy"
        case ackWait = "ack_wait"
        case maxDeliver = "max_deliver"
        case maxAckPending = "max_ack_pending"
        case inactiveThreshold = "inactive_threshold"
    }

    public init(
        durableName: String,
        filterSubject: String? = nil,
        ackWait: Duration = .seconds(30),
        maxDeliver: Int = -1,
        maxAckPending: Int = 1000,
        inactiveThreshold: Duration? = nil
    ) {
        self.durableName = durableName
        self.filterSubject = filterSubject
        self.ackWait = ackWait.nanoseconds
        self.maxDeliver = maxDeliver
        self.maxAckPending = maxAckPending
        self.inactiveThreshold = inactiveThreshold?.nanoseconds
    }
}

/// The server's answer to a JetStream publish.
public struct PublishAck: Decodable, Sendable, Hashable {
    public var stream: String
    public var sequence: UInt64
    /// True when a message with the same `Nats-Msg-Id` was already stored in the window:
    /// this publish was refused and the stored one kept.
    public var duplicate: Bool

    enum CodingKeys: String, CodingKey {
        case stream
        case sequence = "seq"
        case duplicate
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.stream = try container.decode(String.self, forKey: .stream)
        self.sequence = try container.decode(UInt64.self, forKey: .sequence)
        self.duplicate = try container.decodeIfPresent(Bool.self, forKey: .duplicate) ?? false
    }
}

/// What the server reports about a stream.
public struct StreamInfo: Decodable, Sendable {
    public struct State: Decodable, Sendable {
        public var messages: UInt64
        /// The bytes the stream holds.
        public var bytes: UInt64?
        public var firstSequence: UInt64
        public var lastSequence: UInt64
        /// The stream's consumers.
        public var consumerCount: Int?

        enum CodingKeys: String, CodingKey {
            case messages
            case bytes
            case firstSequence = "first_seq"
            case lastSequence = "last_seq"
            case consumerCount = "consumer_count"
        }
    }

    public var config: StreamConfiguration
    public var state: State
    /// When the stream was made (RFC 3339, as the server writes it): a stream deleted and made
    /// again restarts its sequences, and has another.
    public var created: String?
    /// Where its replicas are, in a cluster.
    public var cluster: ClusterInfo?

    /// A clustered stream's placement.
    public struct ClusterInfo: Decodable, Sendable {
        /// A replica that follows the leader.
        public struct Replica: Decodable, Sendable {
            /// Its server's name.
            public var name: String
            /// Whether it has caught up with the leader.
            public var current: Bool
        }

        /// The server that leads the stream's replicas (its name), while one does.
        public var leader: String?
        /// The other replicas.
        public var replicas: [Replica]?
    }
}

/// A message read from a stream by sequence or subject (not delivered by a consumer).
public struct StoredMessage: Sendable, Hashable {
    public var subject: String
    /// Its stream sequence.
    public var sequence: UInt64
    public var payload: [UInt8]

    public init(subject: String, sequence: UInt64, payload: [UInt8]) {
        self.subject = subject
        self.sequence = sequence
        self.payload = payload
    }
}

/// The `error` object of a JetStream API response.
struct JetStreamAPIError: Decodable {
    var code: Int
    var errorCode: Int?
    var description: String?

    enum CodingKeys: String, CodingKey {
        case code
        case errorCode = "err_code"
        case description
    }
}

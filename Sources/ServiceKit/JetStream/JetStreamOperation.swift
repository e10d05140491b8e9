/// One operation of the JetStream API, which is request/reply on a subject under the API prefix
/// (`$JS.API.STREAM.INFO.<stream>`): what ``JetStream`` calls, and what a NATS user's
/// ``NATSPermissions`` name, written once.
public enum JetStreamOperation: Sendable, Hashable {
    /// Creates a stream.
    case streamCreate(stream: String)
    /// Updates a stream's configuration.
    case streamUpdate(stream: String)
    /// A stream's configuration and state.
    case streamInfo(stream: String)
    /// Deletes a stream.
    case streamDelete(stream: String)
    /// One stored message of a stream, by sequence.
    case streamMessageGet(stream: String)
    /// Creates (or updates) a durable consumer.
    case durableConsumerCreate(stream: String, consumer: String)
    /// Deletes a consumer.
    case consumerDelete(stream: String, consumer: String)
    /// Pulls the next messages of a consumer.
    case consumerNext(stream: String, consumer: String)

    /// The JetStream API's prefix without a domain.
    public static let defaultAPIPrefix = "$JS.API"

    /// Every operation of the API (the permission of a service that manages JetStream at large).
    public static func all(apiPrefix: String = Self.defaultAPIPrefix) -> String {
        apiPrefix + ".>"
    }

    /// The operation's subject under `apiPrefix`.
    public func subject(apiPrefix: String = Self.defaultAPIPrefix) -> String {
        "\(apiPrefix).\(self.operation)"
    }

    /// The subject without the API prefix, e.g. `STREAM.INFO.SD_REVOKED_SD`.
    var operation: String {
        switch self {
        case .streamCreate(let stream): "STREAM.CREATE.\(stream)"
        case .streamUpdate(let stream): "STREAM.UPDATE.\(stream)"
        case .streamInfo(let stream): "STREAM.INFO.\(stream)"
        case .streamDelete(let stream): "STREAM.DELETE.\(stream)"
        case .streamMessageGet(let stream): "STREAM.MSG.GET.\(stream)"
        case .durableConsumerCreate(let stream, let consumer): "CONSUMER.DURABLE.CREATE.\(stream).\(consumer)"
        case .consumerDelete(let stream, let consumer): "CONSUMER.DELETE.\(stream).\(consumer)"
        case .consumerNext(let stream, let consumer): "CONSUMER.MSG.NEXT.\(stream).\(consumer)"
        }
    }

    /// The acknowledgement subjects of a consumer's messages (`$JS.ACK.<stream>.<consumer>.>`),
    /// which a puller publishes its acks to.
    public static func acknowledgements(stream: String, consumer: String) -> String {
        "$JS.ACK.\(stream).\(consumer).>"
    }
}

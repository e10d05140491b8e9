/// Pulls from a durable consumer with requests it drives itself, answered on the connection's
/// one pull inbox (``PullMux``): a handle costs nothing until it fetches, and any number of
/// fetches may wait at once on one connection.
public struct JetStreamConsumer: Sendable {
    /// The stream pulled from.
    public let stream: String
    /// The durable consumer's name.
    public let name: String
    private let jetStream: JetStream

    init(jetStream: JetStream, stream: String, name: String) {
        self.jetStream = jetStream
        self.stream = stream
        self.name = name
    }

    /// Up to `batch` messages; fewer (possibly none) if the consumer has fewer within `expires`.
    /// A message delivered after the fetch gave up is negatively acknowledged, so the consumer
    /// delivers it again at once.
    public func fetch(batch: Int, expires: Duration = .seconds(5)) async throws -> [JetStreamMessage] {
        precondition(batch > 0, "batch must be positive")
        let connection = self.jetStream.connection
        let messages = try await connection.pullMux().pull(
            stream: self.stream,
            consumer: self.name,
            batch: batch,
            expires: expires,
            apiPrefix: self.jetStream.apiPrefix,
            on: connection
        )
        return messages.map { JetStreamMessage($0, connection: connection) }
    }
}

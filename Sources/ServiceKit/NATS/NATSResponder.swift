public import Logging
import Synchronization

/// A subject a service answers NATS requests on, shared by its replicas as a queue group:
/// ingest's service and people's lanes, approvals' gate requests, control-api's service
/// acknowledgements, health-monitor's summaries.
///
/// ``serve(_:)`` subscribes, flushes (so that the server has the subscription before the replica
/// says it is ready), then handles the messages, at most ``maxConcurrent`` at once (past it the
/// subscription's buffer, then NATS, holds the rest; the buffer's policy says what happens when
/// it is full), until the task is cancelled or the service shuts down gracefully, which drains
/// the subscription.
///
/// Its ``readiness`` check holds a replica's `/readyz` at 503 until the flush: before, a request
/// sent to the subject finds no responder on this replica (and none at all while it is the only
/// one). At a graceful shutdown the HTTP server stops first (a service group stops its services
/// last to first), so `/readyz` no longer answers while the subscription drains. A flush that
/// fails, most often on a lost connection (the NATS check fails meanwhile), leaves the
/// subscription to the reconnection, which sends it again; it is logged. A subscription the
/// server refuses (the service's NATS user lacks the subject) is not seen here: the services'
/// permissions are checked apart (`NATSPermissions`).
public final class NATSResponder: Sendable {
    /// The readiness check's name.
    public let name: String
    /// The subject answered on.
    public let subject: String
    /// The queue group the service's replicas share: each request reaches one of them.
    public let queue: String
    /// What the subscription holds while every handler is busy.
    public let buffering: NATSBufferingPolicy
    /// Messages handled at once.
    public let maxConcurrent: Int
    let connection: NATSConnection
    let logger: Logger
    private let subscribed = Atomic(false)

    /// A responder on `subject` for queue group `queue`; ``serve(_:)`` starts it.
    public init(
        name: String,
        connection: NATSConnection,
        subject: String,
        queue: String,
        buffering: NATSBufferingPolicy,
        maxConcurrent: Int,
        logger: Logger
    ) {
        self.name = name
        self.connection = connection
        self.subject = subject
        self.queue = queue
        self.buffering = buffering
        self.maxConcurrent = max(1, maxConcurrent)
        self.logger = logger
    }

    /// Whether the server has the subscription (``serve(_:)`` runs and has flushed it).
    public var isSubscribed: Bool { self.subscribed.load(ordering: .acquiring) }

    /// Ready while ``isSubscribed``.
    public var readiness: ReadinessCheck {
        ReadinessCheck(name: self.name) { [self] in self.isSubscribed }
    }

    /// Subscribes and handles each message with `handle` (see the type's documentation) until
    /// the task is cancelled or the service shuts down gracefully.
    public func serve(_ handle: @escaping @Sendable (NATSMessage) async -> Void) async throws {
        let subscription = try await self.connection.subscribe(to: self.subject, queue: self.queue, buffering: self.buffering)
        do {
            try await self.connection.flush()
        } catch {
            // Left to the reconnection, which sends the subscription again.
            self.logger.warning(
                "a responder's subscription was not confirmed by the server",
                metadata: ["subject": "\(self.subject)", "error": "\(String(reflecting: error))"]
            )
        }
        self.subscribed.store(true, ordering: .releasing)
        defer { self.subscribed.store(false, ordering: .releasing) }
        await subscription.serve(maxConcurrent: self.maxConcurrent, handle)
    }
}

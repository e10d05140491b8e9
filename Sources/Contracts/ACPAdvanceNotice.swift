/// An ACP thread's head advanced: ingest committed a message to it. Published by ingest after
/// commit (JSON on ``Subjects/acpAdvanced(tenant:)``, kept by the JetStream stream
/// ``Subjects/acpStreamName``) for the notifier's silent pushes: the thread and where it is now,
/// never the message.
public struct ACPAdvanceNotice: Codable, Sendable, Equatable {
    public var tenant: String
    public var swarmId: String
    public var agentId: String
    public var threadId: String
    /// The message's seq in its thread.
    public var threadSeq: Int64
    /// When it was committed (milliseconds since the epoch).
    public var committedAt: Int64

    public init(tenant: String, swarmId: String, agentId: String, threadId: String, threadSeq: Int64, committedAt: Int64) {
        self.tenant = tenant
        self.swarmId = swarmId
        self.agentId = agentId
        self.threadId = threadId
        self.threadSeq = threadSeq
        self.committedAt = committedAt
    }
}

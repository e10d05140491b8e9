import Contracts

/// An ACP thread's head advanced: a message was committed to it (an ACP event of ingest's log,
/// taken from the ACP stream). Its devices get a silent push so the app can fetch the delta.
struct ACPAdvance: Sendable, Hashable {
    var tenant: String
    var thread: String
    var swarm: String
    /// The thread's seq of the message.
    var threadSeq: Int64
    /// When the message was committed (milliseconds).
    var committedAt: Int64

    /// The advance an ACP event published on `subject` tells of; nil when it is not an ACP
    /// event, names no thread, or names another tenant than its subject.
    init?(_ envelope: BusEventEnvelope, subject: String, subjects: Subjects) {
        guard let parsed = subjects.parseEvent(subject), parsed.kind == .acp, parsed.tenant == envelope.tenantID,
            parsed.swarm == envelope.swarmID, !envelope.threadID.isEmpty
        else { return nil }
        self.tenant = envelope.tenantID
        self.thread = envelope.threadID
        self.swarm = envelope.swarmID
        self.threadSeq = envelope.threadSeq
        self.committedAt = envelope.committedUnixNano / 1_000_000
    }

    init(tenant: String, thread: String, swarm: String, threadSeq: Int64, committedAt: Int64) {
        self.tenant = tenant
        self.thread = thread
        self.swarm = swarm
        self.threadSeq = threadSeq
        self.committedAt = committedAt
    }
}

import Contracts

/// An ACP thread's head advanced: a message was committed to it (ingest's notice, taken from
/// the ACP stream). Its devices get a silent push so the app can fetch the delta.
struct ACPAdvance: Sendable, Hashable {
    var tenant: String
    var thread: String
    var swarm: String
    /// The thread's seq of the message.
    var threadSeq: Int64
    /// When the message was committed (milliseconds).
    var committedAt: Int64

    /// The advance `notice` tells of, published on `subject`; nil when it names no thread or
    /// another tenant than its subject.
    init?(_ notice: ACPAdvanceNotice, subject: String, subjects: Subjects) {
        guard subjects.parseACPAdvanced(subject) == notice.tenant, !notice.threadId.isEmpty else { return nil }
        self.tenant = notice.tenant
        self.thread = notice.threadId
        self.swarm = notice.swarmId
        self.threadSeq = notice.threadSeq
        self.committedAt = notice.committedAt
    }

    init(tenant: String, thread: String, swarm: String, threadSeq: Int64, committedAt: Int64) {
        self.tenant = tenant
        self.thread = thread
        self.swarm = swarm
        self.threadSeq = threadSeq
        self.committedAt = committedAt
    }
}

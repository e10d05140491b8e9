/// The bookkeeping of group commit, apart from its I/O: the tenants' queues of submissions
/// waiting for a transaction, the process-wide bounds on what waits and each tenant's share of
/// them (so that one tenant's flood leaves room for the others), and which submissions go into
/// each tenant's next transaction. ``EventLogWriter`` keeps one behind a lock.
struct CommitQueue<Item> {
    /// A submission: what the writer needs back, and what it weighs.
    struct Entry {
        var item: Item
        var events: Int
        var bytes: Int
    }

    /// What became of a submission offered to the queue.
    enum Admission: Equatable {
        /// Over a bound: nothing was queued (the client gets 429).
        case refused
        /// Queued, and no writer runs for the tenant: the caller starts one.
        case startWriter
        /// Queued behind the tenant's running writer.
        case queued
    }

    let maxEvents: Int
    let maxBytes: Int
    /// What one tenant may have waiting.
    let tenantMaxEvents: Int
    let tenantMaxBytes: Int
    let batchEvents: Int
    private(set) var queues: [String: [Entry]] = [:]
    private(set) var writing: Set<String> = []
    /// Events and bytes queued or being committed.
    private(set) var events = 0
    private(set) var bytes = 0
    /// The same per tenant (a tenant with nothing waiting has no entry).
    private(set) var tenantLoad: [String: (events: Int, bytes: Int)] = [:]

    /// - Parameters:
    ///   - maxEvents: events waiting (queued or in a transaction) across tenants.
    ///   - maxBytes: bytes of them.
    ///   - tenantShare: the fraction of both that one tenant may hold (0 < share ≤ 1).
    ///   - batchEvents: events per transaction (a larger single submission still goes alone).
    init(maxEvents: Int, maxBytes: Int, tenantShare: Double = 1, batchEvents: Int) {
        self.maxEvents = maxEvents
        self.maxBytes = maxBytes
        self.tenantMaxEvents = max(1, Int(Double(maxEvents) * tenantShare))
        self.tenantMaxBytes = max(1, Int(Double(maxBytes) * tenantShare))
        self.batchEvents = batchEvents
    }

    /// Queues `item` for `tenant` unless the events or bytes waiting, in all or of the tenant,
    /// would pass their bound. `events` is at least 1 (``fullBatch(tenant:)`` relies on it: an
    /// empty submission could always join a batch).
    mutating func admit(_ item: Item, tenant: String, events: Int, bytes: Int) -> Admission {
        guard self.events + events <= self.maxEvents, self.bytes + bytes <= self.maxBytes else { return .refused }
        let load = self.tenantLoad[tenant] ?? (0, 0)
        guard load.events + events <= self.tenantMaxEvents, load.bytes + bytes <= self.tenantMaxBytes else { return .refused }
        self.events += events
        self.bytes += bytes
        self.tenantLoad[tenant] = (load.events + events, load.bytes + bytes)
        self.queues[tenant, default: []].append(Entry(item: item, events: events, bytes: bytes))
        return self.writing.insert(tenant).inserted ? .startWriter : .queued
    }

    /// The tenant's next transaction: whole submissions in order, as many as fit in
    /// `batchEvents` (at least one). Empty when nothing waits: the tenant's writer then ends,
    /// and the next admission starts a new one.
    mutating func nextBatch(tenant: String) -> [Entry] {
        guard var queue = self.queues[tenant], !queue.isEmpty else {
            self.queues[tenant] = nil
            self.writing.remove(tenant)
            return []
        }
        let taken = self.batchLength(queue).submissions
        let batch = Array(queue[..<taken])
        queue.removeFirst(taken)
        self.queues[tenant] = queue
        return batch
    }

    /// The tenant's next transaction taken now only if it is already full, that is if
    /// ``nextBatch(tenant:)`` would take the same submissions later, whatever arrives
    /// meanwhile (the writer makes it ready while the transaction before it commits); nil
    /// otherwise. Never ends the tenant's writer.
    mutating func fullBatch(tenant: String) -> [Entry]? {
        guard let queue = self.queues[tenant], !queue.isEmpty else { return nil }
        let (taken, events) = self.batchLength(queue)
        // Full: a submission waits behind it that does not fit, or nothing more could fit.
        guard taken < queue.count || events >= self.batchEvents else { return nil }
        return self.nextBatch(tenant: tenant)
    }

    /// How many of `queue`'s first submissions the next transaction takes, and their events:
    /// whole submissions up to `batchEvents`, at least one.
    private func batchLength(_ queue: [Entry]) -> (submissions: Int, events: Int) {
        var taken = 0
        var count = 0
        while taken < queue.count, count == 0 || count + queue[taken].events <= self.batchEvents {
            count += queue[taken].events
            taken += 1
        }
        return (taken, count)
    }

    /// A transaction of `tenant`'s `batch` has ended (committed or not): its weight no longer
    /// counts.
    mutating func finished(_ batch: [Entry], tenant: String) {
        var load = self.tenantLoad[tenant] ?? (0, 0)
        for entry in batch {
            self.events -= entry.events
            self.bytes -= entry.bytes
            load.events -= entry.events
            load.bytes -= entry.bytes
        }
        self.tenantLoad[tenant] = load.events > 0 || load.bytes > 0 ? load : nil
    }
}

extension CommitQueue: Sendable where Item: Sendable {}
extension CommitQueue.Entry: Sendable where Item: Sendable {}

import Contracts
import EventLog
import Foundation
import Logging
import Metrics
import PostgresNIO
import ServiceKit
import Synchronization

/// Group commit: requests of one tenant queue here and one writer task per tenant commits them
/// together, up to `ingest.write-batch-events` events per transaction; while one commits, the
/// next is made ready when it is already full. In the bulk lane, requests
/// are answered at the commit and the events published off that path, in commit order (each
/// commit's publish follows the tenant's previous one; an append answered after its deadline
/// is published when its answer comes), while the writer commits the next group;
/// at most ``publishesAhead`` commits of a tenant wait to be published, past that the writer
/// waits. The priority lane publishes before it answers: whoever waits for a state change or
/// a service's event finds it on the live feed once answered.
///
/// Bounded: more than `ingest.max-queued-events` events, or `ingest.max-queued-bytes` of them,
/// waiting across tenants, or more than `ingest.max-queued-tenant-share` of either waiting for
/// one tenant, answers 429 (nothing queued); so does a tenant over its rate (``TenantEventRate``,
/// the bulk lane only). A failed transaction answers 503 to every request in it (nothing stored,
/// unless the commit reached Postgres and only its answer was lost, in which case the retry
/// reports those events as duplicates).
final class EventLogWriter: Sendable {
    private struct Submission: Sendable {
        var events: [PreparedEvent]
        var requestID: String
        var continuation: CheckedContinuation<[ItemOutcome], any Error>
    }

    private let queue: Mutex<CommitQueue<Submission>>
    private let log: EventLogAppender
    private let publisher: EventPublisher
    private let maxQueuedBytes: Int
    private let commitTimeout: Duration
    private let logger: Logger
    private let transactionEvents: Recorder
    private let refused: Counter
    /// Appends abandoned at their deadline that have not ended yet, and how many ever were.
    private let abandoned = Mutex(0)
    private let abandonedGauge: Gauge
    private let abandonedTotal: Counter
    /// Each tenant's rate through this lane (the bulk lane has one; the priority lane none).
    private let rate: TenantEventRate?
    /// Each tenant's publishes not done yet, oldest first: each follows the one before it.
    private let publishes = Mutex<[String: [(id: UInt64, task: Task<Void, Never>)]]>([:])
    private let publishIDs = Atomic<UInt64>(0)
    /// Publishes a commit's events before answering its requests (the priority lane).
    private let publishesBeforeAnswering: Bool

    /// Commits of one tenant whose events may wait to be published while the writer commits
    /// the next.
    static let publishesAhead = 2

    /// Which queue a writer serves: tenants' telemetry, or the small events that must not wait
    /// behind it (agents' state changes and services' events: control acknowledgements, gates).
    enum Lane: String, Sendable {
        case bulk
        case priority
    }

    /// A writer for `lane`. The priority lane holds a tenth of the bulk lane's bounds and commits
    /// alongside it: its transaction waits for at most the tenant's one bulk transaction in
    /// flight (the tenant's row lock), never for what is queued behind that.
    init(
        log: EventLogAppender,
        publisher: EventPublisher,
        settings: IngestSettings,
        lane: Lane = .bulk,
        rate: TenantEventRate? = nil,
        logger: Logger
    ) {
        self.log = log
        self.rate = rate
        self.publishesBeforeAnswering = lane == .priority
        self.publisher = publisher
        let share = lane == .bulk ? 1 : 0.1
        let maxEvents = max(settings.maxBatchEvents, Int(Double(settings.maxQueuedEvents) * share))
        let maxBytes = Int(Double(settings.maxQueuedBytes) * share)
        // What one tenant may have waiting: a request larger can never pass (413, not 429).
        self.maxQueuedBytes = Int(Double(maxBytes) * settings.maxQueuedTenantShare)
        self.queue = Mutex(
            CommitQueue(
                maxEvents: maxEvents,
                maxBytes: maxBytes,
                tenantShare: settings.maxQueuedTenantShare,
                batchEvents: settings.writeBatchEvents
            )
        )
        self.commitTimeout = .seconds(settings.commitTimeoutSeconds)
        self.refused = Counter(label: "ingest_requests_refused_total", dimensions: [("reason", "queue_full"), ("lane", lane.rawValue)])
        self.transactionEvents = Recorder(label: "ingest_transaction_events", dimensions: [("lane", lane.rawValue)])
        self.abandonedGauge = Gauge(label: "ingest_appends_abandoned", dimensions: [("lane", lane.rawValue)])
        self.abandonedTotal = Counter(label: "ingest_appends_abandoned_total", dimensions: [("lane", lane.rawValue)])
        self.logger = logger
    }

    /// Stores `events` for `tenant` and publishes them; returns once they are committed.
    func submit(tenant: String, events: [PreparedEvent], requestID: String) async throws -> [ItemOutcome] {
        if events.isEmpty { return [] }
        let bytes = events.reduce(0) { $0 + $1.footprint }
        guard bytes <= self.maxQueuedBytes else {
            throw APIError(
                .payloadTooLarge,
                "the request's events take \(bytes) bytes; at most \(self.maxQueuedBytes) of one tenant's can wait for commit"
            )
        }
        try await self.rate?.check(tenant: tenant)
        return try await withCheckedThrowingContinuation { continuation in
            let admission = self.queue.withLock {
                $0.admit(
                    Submission(events: events, requestID: requestID, continuation: continuation),
                    tenant: tenant,
                    events: events.count,
                    bytes: bytes
                )
            }
            switch admission {
            case .refused:
                self.refused.increment()
                continuation.resume(
                    throwing: APIError(.rateLimited, "ingest is at its queue limit; retry shortly", retryAfterSeconds: 1)
                )
            case .startWriter:
                self.rate?.spend(tenant: tenant, events: events.count)
                Task { await self.drain(tenant: tenant) }
            case .queued:
                self.rate?.spend(tenant: tenant, events: events.count)  // the tenant's writer will take it
            }
        }
    }

    /// A group taken from the queue and made ready to append.
    private struct ReadyGroup: Sendable {
        var batch: [CommitQueue<Submission>.Entry]
        var plan: GroupCommitPlan<PreparedEvent>
        var append: EventLogAppend
    }

    /// Commits the tenant's groups one after the other until nothing waits. While a group
    /// commits, the next is made ready (its statement's arguments encoded) when it is already full, that
    /// is when what arrives later could not join it; otherwise it is taken when the commit
    /// ends, with everything that arrived meanwhile.
    private func drain(tenant: String) async {
        var next: ReadyGroup? = nil
        while true {
            let group: ReadyGroup
            if let made = next {
                group = made
            } else {
                let batch = self.queue.withLock { $0.nextBatch(tenant: tenant) }
                if batch.isEmpty { return }
                group = self.ready(tenant: tenant, batch: batch)
            }
            // The batch counts against the queue's bounds until its append has ended, even
            // when its requests were answered at the deadline before that.
            async let committed: Void = self.commit(group) {
                self.queue.withLock { $0.finished(group.batch, tenant: tenant) }
            }
            next = self.queue.withLock { $0.fullBatch(tenant: tenant) }.map { self.ready(tenant: tenant, batch: $0) }
            await committed
            await self.waitForPublishes(tenant: tenant)
        }
    }

    /// `batch`'s events as one group: repeated msgIds answered by their first occurrence, the
    /// statement's arguments encoded (the commit time is bound when it is appended).
    private func ready(tenant: String, batch: [CommitQueue<Submission>.Entry]) -> ReadyGroup {
        let plan = GroupCommitPlan(
            batch.map { entry in
                entry.item.events.map { event in
                    var event = event
                    event.requestID = entry.item.requestID
                    return event
                }
            },
            msgID: \.msgID
        )
        return ReadyGroup(batch: batch, plan: plan, append: self.log.prepare(tenant: tenant, events: plan.unique))
    }

    /// Publishes `events` once the tenant's previous commit's events are published (at once,
    /// in the priority lane).
    private func publish(tenant: String, events: [CommittedEvent], committedAt: Date) {
        let committedAtNanoseconds = Int64(committedAt.timeIntervalSince1970 * 1e9)
        if self.publishesBeforeAnswering {
            self.publisher.publish(tenant: tenant, events: events, committedAtNanoseconds: committedAtNanoseconds)
            return
        }
        let id = self.publishIDs.wrappingAdd(1, ordering: .relaxed).newValue
        self.publishes.withLock { publishes in
            let previous = publishes[tenant]?.last?.task
            let task = Task {
                await previous?.value
                self.publisher.publish(tenant: tenant, events: events, committedAtNanoseconds: committedAtNanoseconds)
                self.publishes.withLock { publishes in
                    publishes[tenant]?.removeAll { $0.id == id }
                    if publishes[tenant]?.isEmpty == true { publishes[tenant] = nil }
                }
            }
            publishes[tenant, default: []].append((id, task))
        }
    }

    /// Returns once at most ``publishesAhead`` of the tenant's commits wait to be published
    /// (across its writer's runs: a writer that ends leaves its publishes to the next).
    private func waitForPublishes(tenant: String) async {
        while let oldest = self.publishes.withLock({ publishes -> Task<Void, Never>? in
            guard let waiting = publishes[tenant], waiting.count > Self.publishesAhead else { return nil }
            return waiting.first?.task
        }) {
            await oldest.value
        }
    }

    /// The append, or 503 once `commitTimeout` passes: while Postgres is unreachable its pool
    /// queues requests until a circuit breaker trips (a minute), which would hold clients
    /// that long. The outcome of a timed-out append is left to the client's retry (duplicates).
    /// A timed-out append is not waited for: the tenant's next group may then run beside it
    /// (the tenant's row lock serialises the two, in either order, as it does two replicas'),
    /// and its events, if it commits, are published when its answer comes. `settled` runs once
    /// the append has ended, answered in time or not.
    private func appendWithinDeadline(
        _ append: EventLogAppend,
        settled: @escaping @Sendable () -> Void
    ) async throws -> [ItemOutcome] {
        let timeout = self.commitTimeout
        // Whether the append has ended, and whether it was abandoned before it did: the gauge
        // counts those abandoned and not yet ended (one postgres-nio never answers stays).
        let fate = AppendFate()
        do {
            return try await self.append(append, timeout: timeout) {
                if fate.end() { self.countAbandoned(-1) }
                settled()
            }
        } catch {
            if fate.abandon() {
                self.abandonedTotal.increment()
                self.countAbandoned(1)
            }
            throw error
        }
    }

    /// Recorded under the lock: two changes at once are recorded in the order they were made.
    private func countAbandoned(_ change: Int) {
        self.abandoned.withLock { count in
            count += change
            self.abandonedGauge.record(count)
        }
    }

    /// The append against `timeout`; `ended` runs once it has ended.
    private func append(
        _ append: EventLogAppend,
        timeout: Duration,
        ended: @escaping @Sendable () -> Void
    ) async throws -> [ItemOutcome] {
        try await withDeadline(
            timeout,
            orThrow: APIError(
                .serviceUnavailable,
                "the event log did not answer within \(timeout); retry (events already stored are then reported as duplicates)",
                retryAfterSeconds: 1
            )
        ) {
            // Published from here, not by the caller: a commit whose answer comes after the
            // deadline (the client got 503) is still on the live feed. One whose COMMIT reached
            // Postgres but whose answer never came back (its connection lost) is in the log
            // unpublished: consumers back-fill it from the log when the next event shows the
            // gap, and stream-fanout's tail check finds it when no event follows.
            defer { ended() }
            let committedAt = Date()
            let (outcomes, committed) = try await self.log.append(append, committedAt: committedAt)
            self.publish(tenant: append.tenant, events: committed, committedAt: committedAt)
            return outcomes
        }
    }

    /// Commits `group` and answers its requests (its events are then published).
    private func commit(_ group: ReadyGroup, settled: @escaping @Sendable () -> Void) async {
        let tenant = group.append.tenant
        let result: Result<[ItemOutcome], any Error>
        do {
            let outcomes = try await self.appendWithinDeadline(group.append, settled: settled)
            self.transactionEvents.record(group.append.events.count)
            result = .success(outcomes)
        } catch let error as APIError {
            result = .failure(error)
        } catch {
            self.logger.error("event log append failed", metadata: ["tenant": "\(tenant)", "error": "\(String(reflecting: error))"])
            result = .failure(
                APIError(
                    .serviceUnavailable,
                    "the event log is unavailable; retry (events already stored are then reported as duplicates)",
                    retryAfterSeconds: 1
                )
            )
        }
        switch result {
        case .success(let outcomes):
            for (entry, mine) in zip(group.batch, group.plan.outcomes(outcomes)) { entry.item.continuation.resume(returning: mine) }
        case .failure(let error):
            for entry in group.batch { entry.item.continuation.resume(throwing: error) }
        }
    }
}

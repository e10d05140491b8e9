import Contracts
import EventLog
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Feeds ``HealthEngine`` and carries out what it decides.
///
/// The replica follows the tenants of the event partitions it holds (``PartitionLeases``), and
/// hears only their events: one subscription per partition held, none to every event. When it
/// takes a partition it subscribes to it, takes back the thresholds and firing incidents of the
/// partition's tenants, and rebuilds their windows from the log (the last
/// `health.rebuild-hours`, at most `health.rebuild-max-events` per tenant), evaluating nothing
/// while it replays; then it applies their live events in seq order: an event past a gap first
/// has the gap read from the log, an event already applied is skipped. When it gives a
/// partition back it unsubscribes, waits for what it was applying, and forgets the tenants.
/// Rules an event touches are evaluated at once; every rule every
/// `health.evaluate-milliseconds`. Incident changes are written in order by one writer; rollups
/// every `health.rollup-seconds`; swarm metrics every `health.metric-seconds`.
final class HealthFeed: Service, PartitionFollower, Sendable {
    let engine: HealthEngine
    let eventLog: EventLogReader
    let incidents: IncidentStore
    let thresholds: ThresholdStore
    let rollups: RollupStore
    let outbox: HealthOutbox
    let connection: NATSConnection
    let subjects: Subjects
    let settings: HealthSettings
    let leases: PartitionLeases
    let logger: Logger
    private let ready = Mutex(false)
    /// What follows each partition held: its task, and the partitions not rebuilt yet (each
    /// with the id of the follow that rebuilds it: a follower left behind changes nothing of a
    /// later one's).
    private let following = Mutex<(tasks: [EventPartition: Task<Void, Never>], rebuilding: [EventPartition: UUID])>(([:], [:]))
    /// Rebuilds, one partition at a time: partitions taken together do not take every
    /// connection of the pool (the lease rounds need one).
    private let rebuilds = AsyncSerializer()
    /// Live events and reads from the log, one tenant's run at a time: a catch-up never
    /// interleaves with a live run.
    private let lane = AsyncSerializer()
    /// Tenants whose log could not be read: the seq through which they are behind.
    private let behind = Mutex<[String: Int64]>([:])
    private let changes: AsyncStream<ChangeItem>
    private let changeSink: AsyncStream<ChangeItem>.Continuation

    /// What the incident writer takes: a tenant's changes, or a mark to answer once everything
    /// before it is written.
    private enum ChangeItem: Sendable {
        case changes(String, [TenantHealth.Change])
        case mark(CheckedContinuation<Void, Never>)
    }

    /// Events read from the log per page.
    static let page = 5_000

    init(
        engine: HealthEngine,
        eventLog: EventLogReader,
        incidents: IncidentStore,
        thresholds: ThresholdStore,
        rollups: RollupStore,
        outbox: HealthOutbox,
        connection: NATSConnection,
        subjects: Subjects,
        settings: HealthSettings,
        leases: PartitionLeases,
        logger: Logger
    ) {
        self.engine = engine
        self.eventLog = eventLog
        self.incidents = incidents
        self.thresholds = thresholds
        self.rollups = rollups
        self.outbox = outbox
        self.connection = connection
        self.subjects = subjects
        self.settings = settings
        self.leases = leases
        self.logger = logger
        (self.changes, self.changeSink) = AsyncStream.makeStream()
    }

    /// True once the replica took its first share of the partitions and rebuilt their windows
    /// (it stays ready while partitions change hands later).
    var isReady: Bool {
        self.ready.withLock { ready in
            if !ready, self.leases.hasClaimed, self.following.withLock({ $0.rebuilding.isEmpty }) { ready = true }
            return ready
        }
    }

    static func now() -> Int64 { Date().milliseconds }

    func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.writeChanges() }
            group.addTask { await self.every(.milliseconds(self.settings.evaluateMilliseconds)) { try await self.evaluateAll() } }
            group.addTask { await self.every(.seconds(self.settings.rollupSeconds)) { try await self.writeRollups() } }
            group.addTask { await self.every(.seconds(self.settings.metricSeconds)) { try await self.sendMetrics() } }
            group.addTask { await self.every(.seconds(3600)) { try await self.rollups.prune() } }
            group.addTask { await self.every(.seconds(1)) { await self.catchUp() } }
            // The lease rounds until shutdown; then every partition is given back.
            await cancelWhenGracefulShutdown { await self.leases.run(self) }
            try? await self.writeRollups()
            self.changeSink.finish()
            group.cancelAll()
        }
    }

    // MARK: Partitions

    /// Subscribes to `partition`'s events, rebuilds its tenants' windows, then applies its live
    /// events until ``unfollow(_:)``.
    func follow(_ partition: EventPartition) async -> Bool {
        let subscription: NATSSubscription
        do {
            // Subscribed before the rebuild, so nothing falls between the two. The buffer is a
            // partition's share of the replica's (a message dropped is a gap, read from the log).
            subscription = try await self.connection.subscribe(
                to: self.subjects.events(partition: partition),
                buffering: .dropNewest(maxMessages: 262_144 / EventPartition.count, maxBytes: (128 << 20) / EventPartition.count)
            )
        } catch {
            self.logger.error(
                "cannot subscribe to a partition's events; its lease is given back",
                metadata: ["partition": "\(partition)", "error": "\(error)"]
            )
            return false
        }
        await self.engine.own(partition)
        let id = UUID()
        self.following.withLock { $0.rebuilding[partition] = id }
        let task = Task {
            await withTaskCancellationHandler {
                var attempt = 0
                while !Task.isCancelled {
                    do {
                        // One rebuild at a time; one whose partition went while it waited does nothing.
                        try await self.rebuilds.run {
                            try Task.checkCancellation()
                            try await self.rebuild(partition)
                        }
                        break
                    } catch {
                        // Given back meanwhile: nothing to retry.
                        if Task.isCancelled { break }
                        attempt += 1
                        self.logger.warning(
                            "cannot rebuild a partition's windows from the log; retrying",
                            metadata: ["partition": "\(partition)", "error": "\(String(reflecting: error))"]
                        )
                        try? await Task.sleep(for: .seconds(min(attempt, 5)))
                    }
                }
                guard !Task.isCancelled else { return }
                await self.engine.rebuilt(partition)
                self.following.withLock { if $0.rebuilding[partition] == id { $0.rebuilding[partition] = nil } }
                for await message in subscription {
                    guard let envelopes = try? BusEventBatch.envelopes(in: message.payload, subject: message.subject, subjects: self.subjects)
                    else { continue }
                    var start = envelopes.startIndex
                    while start < envelopes.endIndex {
                        // A batch is one tenant's; a run of one tenant's events is applied at once.
                        let tenant = envelopes[start].tenantID
                        var end = start + 1
                        while end < envelopes.endIndex, envelopes[end].tenantID == tenant { end += 1 }
                        await self.live(envelopes[start..<end], tenant: tenant)
                        start = end
                    }
                }
            } onCancel: {
                subscription.unsubscribe()
            }
        }
        self.following.withLock { $0.tasks[partition] = task }
        return true
    }

    /// Unsubscribes from `partition` and forgets its tenants at once (nothing of them is applied
    /// after), then waits for what was being applied and for the incident changes already
    /// decided to be written, so that the replica taking the partition finds them.
    ///
    /// The waits are bounded by a lease round: a read of the log that hangs (postgres-nio can
    /// wait forever on a connection that closed) must not hold the lease rounds. Whatever such a
    /// straggler would apply later is refused by the engine, which no longer owns the partition.
    func unfollow(_ partition: EventPartition) async {
        let task = self.following.withLock { following in
            following.rebuilding[partition] = nil
            return following.tasks.removeValue(forKey: partition)
        }
        task?.cancel()
        await self.engine.disown(partition)
        self.behind.withLock { behind in
            for tenant in Array(behind.keys) where EventPartition(tenant: tenant) == partition { behind[tenant] = nil }
        }
        let settled =
            (try? await withDeadline(self.leases.interval, orThrow: CancellationError()) { () async -> Void in
                if let task { await task.value }
                await self.changesWritten()
            }) != nil
        if !settled {
            self.logger.warning(
                "a partition's follower or its incident changes did not settle within a round; left behind",
                metadata: ["partition": "\(partition)"]
            )
        }
    }

    /// Returns once the incident changes decided before the call are written (at once when the
    /// writer has ended).
    private func changesWritten() async {
        await withCheckedContinuation { continuation in
            if case .terminated = self.changeSink.yield(.mark(continuation)) { continuation.resume() }
        }
    }

    /// Takes back the thresholds and firing incidents of `partition`'s tenants, and rebuilds
    /// their windows from the log.
    private func rebuild(_ partition: EventPartition) async throws {
        let inPartition = { (tenant: String) in EventPartition(tenant: tenant) == partition }
        for (tenant, set) in try await self.thresholds.all() where inPartition(tenant) {
            await self.engine.setThresholds(set, tenant: tenant)
        }
        for incident in try await self.incidents.firing(owned: inPartition) { await self.engine.restore(incident) }
        let heads = try await self.eventLog.allHeads().filter { inPartition($0.key) }
        let since = Date().addingTimeInterval(-Double(self.settings.rebuildHours) * 3600)
        var events = 0
        for (tenant, head) in heads.sorted(by: { $0.key < $1.key }) where head > 0 {
            try Task.checkCancellation()
            guard await self.engine.follows(tenant) else { continue }
            let applied = await self.engine.lastApplied(tenant) ?? 0
            guard applied < head else { continue }
            let first = try await self.eventLog.firstSeq(tenant: tenant, committedSince: since) ?? (head + 1)
            let from = max(first - 1, head - Int64(self.settings.rebuildMaxEvents), applied)
            events += try await self.replay(tenant: tenant, after: from, through: head, evaluate: false)
            try Task.checkCancellation()
            await self.engine.setApplied(tenant, head)
        }
        self.logger.info(
            "windows of a partition rebuilt from the log",
            metadata: ["partition": "\(partition)", "tenants": "\(heads.count)", "events": "\(events)"]
        )
    }

    /// Applies the log's events `after < seq <= through` of `tenant`; answers how many. With
    /// `lane`, each page is read outside the lane and applied in it (the engine skips what a
    /// live run applied meanwhile): a read that hangs while Postgres is away holds no live run.
    @discardableResult
    private func replay(tenant: String, after: Int64, through: Int64, evaluate: Bool, lane: AsyncSerializer? = nil) async throws -> Int {
        var cursor = after
        var count = 0
        while cursor < through {
            let page = try await self.eventLog.timedEvents(tenant: tenant, after: cursor, through: through, limit: Self.page)
            guard let last = page.last else { break }
            // A follower stopped meanwhile applies nothing more.
            try Task.checkCancellation()
            let events = page.map { timed in
                HealthEvent(
                    seq: timed.event.seq,
                    swarmID: timed.event.swarmID,
                    agentID: timed.event.agentID,
                    kind: timed.event.kind,
                    severity: timed.event.severity,
                    at: timed.committedAt.milliseconds,
                    frame: timed.event.frame.readableBytesView
                )
            }
            if let lane {
                await lane.run { await self.apply(events, tenant: tenant, evaluate: evaluate) }
            } else {
                await self.apply(events, tenant: tenant, evaluate: evaluate)
            }
            count += events.count
            cursor = last.event.seq
        }
        return count
    }

    // MARK: Live

    /// Applies live events of one tenant in seq order (``FeedStep``): one call to the engine for
    /// each run without a gap (evaluated once, after the run: a condition that starts and ends
    /// within one bus message raises nothing); a gap is read from the log first; those at or
    /// below what was applied are skipped. When the log cannot be read, the tenant is behind
    /// through the run's last seq, and ``catchUp()`` reads the rest once the log answers.
    private func live(_ envelopes: ArraySlice<BusEventEnvelope>, tenant: String) async {
        guard await self.engine.follows(tenant, events: envelopes.count), let last = envelopes.map(\.seq).max() else { return }
        let run = Array(envelopes)
        await self.lane.run {
            // The partition was given back while this run waited.
            guard !Task.isCancelled else { return }
            let applied = await self.engine.lastApplied(tenant) ?? 0
            for step in FeedStep.plan(seqs: run.map(\.seq), applied: applied, maxFill: self.settings.rebuildMaxEvents) {
                switch step {
                case .apply(let positions):
                    await self.apply(positions.map { HealthEvent(run[$0]) }, tenant: tenant, evaluate: true)
                case .fill(let after, let through):
                    do {
                        HealthMetrics.gapFilled.increment(by: try await self.replay(tenant: tenant, after: after, through: through, evaluate: true))
                    } catch {
                        self.fellBehind(tenant, through: last, error: error)
                        return
                    }
                }
            }
        }
    }

    /// The log could not be read for `tenant`: what it holds through `seq` is read by the next
    /// ``catchUp()`` that finds the log answering (or by the gap check of the tenant's next
    /// message).
    private func fellBehind(_ tenant: String, through seq: Int64, error: any Error) {
        self.behind.withLock { $0[tenant] = max($0[tenant] ?? 0, seq) }
        HealthMetrics.gapReadFailed.increment()
        self.logger.warning(
            "events not applied yet: the log could not be read; they are read again within a second",
            metadata: ["tenant": "\(tenant)", "through": "\(seq)", "error": "\(String(reflecting: error))"]
        )
    }

    /// Reads from the log what tenants that fell behind have not applied yet (every second): a
    /// quiet tenant's last events are not left waiting for its next message.
    private func catchUp() async {
        for (tenant, through) in self.behind.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            let applied = await self.engine.lastApplied(tenant) ?? 0
            do {
                if applied < through {
                    let after = max(applied, through - Int64(self.settings.rebuildMaxEvents))
                    let filled = try await self.replay(tenant: tenant, after: after, through: through, evaluate: true, lane: self.lane)
                    HealthMetrics.gapFilled.increment(by: filled)
                }
                self.behind.withLock { if let mark = $0[tenant], mark <= through { $0[tenant] = nil } }
            } catch {
                self.logger.debug(
                    "still behind: the log cannot be read",
                    metadata: ["tenant": "\(tenant)", "error": "\(String(reflecting: error))"]
                )
            }
        }
    }

    /// Events of one tenant to the engine (with `evaluate`, evaluated now); their changes to the
    /// writer.
    private func apply(_ events: [HealthEvent], tenant: String, evaluate: Bool) async {
        guard !events.isEmpty else { return }
        let changes = await self.engine.apply(events, tenant: tenant, evaluate: evaluate, now: Self.now())
        if !changes.isEmpty { self.changeSink.yield(.changes(tenant, changes)) }
    }

    // MARK: Timers

    private func every(_ interval: Duration, _ body: @Sendable () async throws -> Void) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            guard !Task.isCancelled else { return }
            do {
                try await body()
            } catch {
                self.logger.warning("periodic health work failed", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    private func evaluateAll() async throws {
        for (tenant, changes) in await self.engine.evaluateAll(now: Self.now()) { self.changeSink.yield(.changes(tenant, changes)) }
    }

    private func writeRollups() async throws {
        try await self.rollups.save(await self.engine.takeRollups(now: Self.now()))
    }

    private func sendMetrics() async throws {
        let now = Self.now()
        let sender = ServiceEventSender(connection: self.connection, subjects: self.subjects)
        var byTenant: [String: [BusServiceEvent]] = [:]
        for metric in await self.engine.takeSwarmMetrics(now: now) {
            for (name, value) in metric.values {
                byTenant[metric.tenant, default: []].append(try SwarmMetricFrame.event(swarm: metric.swarm, name: name, value: value, at: now))
            }
        }
        for (tenant, events) in byTenant {
            for start in stride(from: 0, to: events.count, by: ServiceEventSender.maxBatch) {
                try await sender.send(tenant: tenant, Array(events[start..<min(start + ServiceEventSender.maxBatch, events.count)]))
            }
        }
    }

    // MARK: Incidents

    /// Writes incident changes in the order they were decided.
    private func writeChanges() async {
        for await item in self.changes {
            guard case .changes(let tenant, let changes) = item else {
                if case .mark(let continuation) = item { continuation.resume() }
                continue
            }
            for change in changes {
                var attempt = 0
                while !Task.isCancelled {
                    do {
                        try await self.write(change, tenant: tenant)
                        break
                    } catch {
                        attempt += 1
                        self.logger.warning("incident change not written yet", metadata: ["error": "\(String(reflecting: error))"])
                        try? await Task.sleep(for: .milliseconds(min(200 * attempt, 5000)))
                    }
                }
            }
            self.outbox.kick()
        }
    }

    private func write(_ change: TenantHealth.Change, tenant: String) async throws {
        switch change {
        case .fire(let id, let subject, let summary):
            let incident = Incident(tenant: tenant, id: id, subject: subject, summary: summary, firedAt: .nowMilliseconds)
            let firing = try await self.incidents.fire(incident)
            if firing.id == id { HealthMetrics.incidentsFired.increment() }
            if firing.id != id { await self.engine.adopt(tenant: tenant, fingerprint: subject.fingerprint, incidentID: firing.id) }
        case .resolve(let id, _):
            if try await self.incidents.resolve(tenant: tenant, id: id, at: .nowMilliseconds) != nil { HealthMetrics.incidentsResolved.increment() }
        }
    }
}

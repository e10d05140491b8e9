import Contracts
import Foundation
import HealthMonitorContract
import Logging

/// The windows of every tenant this replica follows, behind one actor: events go in, incident
/// changes, rollups and swarm metrics come out. The I/O around it (the feed, the writer, the
/// timers) is in ``HealthFeed``.
actor HealthEngine {
    let settings: HealthSettings
    private(set) var tenants: [String: TenantHealth] = [:]
    /// The last seq applied per tenant.
    private(set) var applied: [String: Int64] = [:]
    /// What changed since the rollups were last taken.
    private var dirty: [String: Set<TenantHealth.Touched>] = [:]
    /// The swarm metrics last sent, per tenant and swarm.
    private var sentMetrics: [String: [String: [Double]]] = [:]
    /// The event partitions whose tenants this replica follows (``PartitionLeases``).
    private(set) var owned: Set<EventPartition> = []
    /// Owned partitions whose tenants' windows are still being rebuilt from the log: no rule of
    /// theirs is evaluated, and no rollup or metric of theirs taken, until they are.
    private(set) var rebuilding: Set<EventPartition> = []
    /// Events of tenants past `health.max-tenants`, ignored.
    private(set) var ignored = 0
    private(set) var eventsApplied = 0
    /// The newest event applied (committed milliseconds since the epoch).
    private var newestAt: Int64 = 0
    private var evaluations = 0

    init(settings: HealthSettings) {
        self.settings = settings
    }

    /// Whether this replica follows `tenant` (its partition is held here, and there is room for
    /// it); when there is no room, `events` of it are counted as ignored.
    func follows(_ tenant: String, events: Int = 1) -> Bool {
        guard self.owned.contains(EventPartition(tenant: tenant)) else { return false }
        if self.tenants[tenant] != nil { return true }
        if self.tenants.count >= self.settings.maxTenants {
            self.ignored += events
            HealthMetrics.ignored.increment(by: events)
            return false
        }
        return true
    }

    /// The tenants of `partition` are followed here from now on.
    func own(_ partition: EventPartition) {
        self.owned.insert(partition)
        self.rebuilding.insert(partition)
        HealthMetrics.partitionsRebuilding.set(self.rebuilding.count)
    }

    /// The tenants of `partition` are rebuilt: their rules are evaluated from now on.
    func rebuilt(_ partition: EventPartition) {
        self.rebuilding.remove(partition)
        HealthMetrics.partitionsRebuilding.set(self.rebuilding.count)
    }

    /// Whether `tenant`'s windows are whole (its partition owned and rebuilt).
    private func settled(_ tenant: String) -> Bool {
        let partition = EventPartition(tenant: tenant)
        return self.owned.contains(partition) && !self.rebuilding.contains(partition)
    }

    /// The tenants of `partition` are no longer followed here: their windows, marks and pending
    /// rollups go (the replica that takes the partition rebuilds them from the log).
    func disown(_ partition: EventPartition) {
        self.owned.remove(partition)
        self.rebuilding.remove(partition)
        HealthMetrics.partitionsRebuilding.set(self.rebuilding.count)
        for id in Array(self.tenants.keys) + Array(self.applied.keys) where EventPartition(tenant: id) == partition {
            self.tenants[id] = nil
            self.applied[id] = nil
            self.dirty[id] = nil
            self.sentMetrics[id] = nil
        }
    }

    private func tenant(_ id: String) -> TenantHealth {
        self.tenants[id]
            ?? TenantHealth(
                tenant: id,
                limits: self.settings.limits,
                models: self.settings.models,
                sampleMilliseconds: Int64(self.settings.sampleSeconds) * 1000
            )
    }

    func lastApplied(_ tenant: String) -> Int64? { self.applied[tenant] }

    func setApplied(_ tenant: String, _ seq: Int64) {
        guard self.owned.contains(EventPartition(tenant: tenant)) else { return }
        self.applied[tenant] = max(self.applied[tenant] ?? 0, seq)
    }

    /// Applies events of one tenant in seq order (those at or below what was applied are
    /// skipped); with `evaluate`, evaluates what they touched at `now` and answers the changes.
    func apply(_ events: [HealthEvent], tenant id: String, evaluate: Bool, now: Int64) -> [TenantHealth.Change] {
        // A read from the log that ends after the partition moved away applies nothing.
        guard self.owned.contains(EventPartition(tenant: id)) else { return [] }
        var tenant = self.tenant(id)
        let evicted = tenant.evicted
        defer { HealthMetrics.evicted.increment(by: tenant.evicted - evicted) }
        var touched: Set<TenantHealth.Touched> = []
        var last = self.applied[id] ?? 0
        for event in events where event.seq > last {
            touched.formUnion(tenant.apply(event))
            last = event.seq
            self.eventsApplied += 1
        }
        self.applied[id] = last
        HealthMetrics.applied.increment(by: events.count)
        if let newest = events.last { self.newestAt = max(self.newestAt, newest.at) }
        self.dirty[id, default: []].formUnion(touched)
        var changes: [TenantHealth.Change] = []
        if evaluate, !touched.isEmpty, self.settled(id) { changes = tenant.evaluate(now: now, only: touched, newID: Incident.newID) }
        self.tenants[id] = tenant
        return changes
    }

    /// Evaluates every rule of every tenant at `now` (and updates the gauges).
    func evaluateAll(now: Int64) -> [(tenant: String, changes: [TenantHealth.Change])] {
        var all: [(String, [TenantHealth.Change])] = []
        let sizes = self.sizes()
        HealthMetrics.tenants.set(sizes.tenants)
        HealthMetrics.sessions.set(sizes.sessions)
        HealthMetrics.skills.set(sizes.skills)
        HealthMetrics.agents.set(sizes.agents)
        HealthMetrics.lagMilliseconds.set(self.newestAt > 0 ? max(0, now - self.newestAt) : 0)
        for id in Array(self.tenants.keys) where self.settled(id) {
            var tenant = self.tenants[id]!
            let changes = tenant.evaluate(now: now, newID: Incident.newID)
            self.tenants[id] = tenant
            if !changes.isEmpty { all.append((id, changes)) }
            // Time moves the windows: the swarms active in the last quarter of an hour every
            // time, the skills called in the last day every half minute.
            self.dirty[id, default: []].formUnion(tenant.swarms.filter { now - $0.value.lastEventAt < 900_000 }.keys.map { .swarm($0) })
            if self.evaluations % 30 == 0 {
                self.dirty[id, default: []].formUnion(tenant.skills.filter { now - $0.value.lastCallAt < 86_400_000 }.keys.map { .skill($0) })
            }
        }
        self.evaluations += 1
        return all
    }

    /// Takes back a firing incident loaded from the store.
    func restore(_ incident: Incident) {
        guard let subject = incident.subject, self.owned.contains(EventPartition(tenant: incident.tenant)) else { return }
        var tenant = self.tenant(incident.tenant)
        tenant.restore(incidentID: incident.id, subject: subject)
        self.tenants[incident.tenant] = tenant
    }

    /// The store kept another incident for this fingerprint (it fired already): that one it is.
    func adopt(tenant id: String, fingerprint: String, incidentID: String) {
        guard var tenant = self.tenants[id] else { return }
        tenant.adopt(fingerprint: fingerprint, incidentID: incidentID)
        self.tenants[id] = tenant
    }

    func setThresholds(_ thresholds: ThresholdSet, tenant id: String) {
        guard self.follows(id) else { return }
        var tenant = self.tenant(id)
        tenant.thresholds = thresholds
        self.tenants[id] = tenant
        // Warnings and statuses depend on the thresholds: every rollup of the tenant anew.
        self.dirty[id, default: []].formUnion(
            tenant.sessions.keys.map { .session($0) } + tenant.skills.keys.map { .skill($0) } + tenant.swarms.keys.map { .swarm($0) }
        )
    }

    // MARK: Rollups

    /// The rollups of what changed since the last call, rendered at `now`.
    func takeRollups(now: Int64) -> [HealthRollup] {
        // A tenant still being rebuilt keeps its marks until it is whole.
        let dirty = self.dirty.filter { self.settled($0.key) }
        for id in dirty.keys { self.dirty[id] = nil }
        var rollups: [HealthRollup] = []
        for (id, touched) in dirty {
            guard let tenant = self.tenants[id] else { continue }
            for item in touched {
                if let rollup = HealthRollup(tenant, item, now: now) { rollups.append(rollup) }
            }
        }
        return rollups
    }

    /// The swarm metrics that changed since they were last sent (swarms active in the last ten
    /// minutes only).
    func takeSwarmMetrics(now: Int64) -> [(tenant: String, swarm: String, values: [(name: String, value: Double)])] {
        var out: [(String, String, [(String, Double)])] = []
        for (id, tenant) in self.tenants where self.settled(id) {
            for (swarmID, swarm) in tenant.swarms where now - swarm.lastEventAt < 600_000 {
                let values = [
                    ("error_rate", (swarm.errorRate(now: now) * 1000).rounded() / 1000),
                    ("throughput", swarm.eventsPerMinute(now: now)),
                    ("stuck_agents", Double(tenant.stuckAgents(swarm: swarmID))),
                    ("cost_per_hour", (swarm.costPerHour(now: now) * 100).rounded() / 100),
                ]
                let numbers = values.map(\.1)
                guard self.sentMetrics[id]?[swarmID] != numbers else { continue }
                self.sentMetrics[id, default: [:]][swarmID] = numbers
                out.append((id, swarmID, values))
            }
        }
        return out
    }

    /// Sizes, for the metrics and the benchmark.
    func sizes() -> (tenants: Int, sessions: Int, skills: Int, agents: Int, swarms: Int, alerts: Int) {
        var sizes = (tenants: self.tenants.count, sessions: 0, skills: 0, agents: 0, swarms: 0, alerts: 0)
        for tenant in self.tenants.values {
            sizes.sessions += tenant.sessions.count
            sizes.skills += tenant.skills.count
            sizes.agents += tenant.agents.count
            sizes.swarms += tenant.swarms.count
            sizes.alerts += tenant.alerts.count
        }
        return sizes
    }
}

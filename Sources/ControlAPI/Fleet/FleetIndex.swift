import Contracts
import EventLog
import Foundation
import Synchronization

/// The fleet as control-api answers it: every agent of every tenant with its last-known state
/// and its events and errors of the last hour by minute. Built from the event log at start
/// and kept current from the live feed (both by ``FleetFeed``): a live event at or below the
/// snapshot's head is ignored, so the two never count one twice. Live events may arrive out of
/// seq order (ingest replicas publish independently): each is counted, and a state event older
/// than the agent's last one does not replace it, nor does an older event's swarm.
///
/// Bounded per tenant: at most `maxAgentsPerTenant` agents; a new agent past it evicts the
/// tenant's longest-silent tenth if they have been silent for `offlineAfter` (the fleet shows
/// them offline anyway), else it is not indexed. Task summaries are cut to
/// ``maxTaskSummary`` characters.
final class FleetIndex: Sendable {
    /// The longest task summary kept, in characters.
    static let maxTaskSummary = 500

    /// One agent as the index knows it.
    struct AgentRecord: Sendable {
        var agentID: String
        var swarmID: String
        /// The seq of the event `swarmID` comes from (0: the snapshot's).
        var swarmSeq: Int64 = 0
        /// The `state` of its last state event; nil before it sent one.
        var state: String?
        var taskSummary: String?
        /// The seq of the state event `state` comes from.
        var stateSeq: Int64 = 0
        /// A worker: its last state event said it takes requests (`attrs.worker`).
        var acceptsRequests = false
        /// The tmux session and host its last state event named (`attrs.tmuxSession`, `attrs.host`).
        var tmuxSession: String?
        var host: String?
        var stateChangedAt: Date
        var lastSeenAt: Date
        /// The seq of its latest event.
        var lastSeq: Int64 = 0
        var minutes = MinuteCounts()

        /// The order lists of agents take: the most recently seen first, then by id.
        static func mostRecentFirst(_ a: AgentRecord, _ b: AgentRecord) -> Bool {
            (a.lastSeenAt, b.agentID) > (b.lastSeenAt, a.agentID)
        }
    }

    /// Events and errors per minute for the last hour, in a ring.
    struct MinuteCounts: Sendable {
        private var minute = [Int64](repeating: -1, count: 60)
        private var events = [Int64](repeating: 0, count: 60)
        private var errors = [Int64](repeating: 0, count: 60)

        mutating func add(at date: Date, events: Int64, errors: Int64) {
            let minute = Int64(date.timeIntervalSince1970 / 60)
            let slot = Int(minute % 60)
            if self.minute[slot] != minute {
                guard minute > self.minute[slot] else { return }  // older than the ring
                self.minute[slot] = minute
                self.events[slot] = 0
                self.errors[slot] = 0
            }
            self.events[slot] += events
            self.errors[slot] += errors
        }

        /// Events and errors of the 60 minutes up to `now`.
        func lastHour(now: Date) -> (events: Int64, errors: Int64) {
            let current = Int64(now.timeIntervalSince1970 / 60)
            var total: (Int64, Int64) = (0, 0)
            for slot in 0..<60 where self.minute[slot] > current - 60 && self.minute[slot] <= current {
                total.0 += self.events[slot]
                total.1 += self.errors[slot]
            }
            return total
        }
    }

    private struct TenantFleet {
        /// Events up to this seq came with the snapshot.
        var snapshotHead: Int64 = 0
        var agents: [String: AgentRecord] = [:]
        /// Full and nobody silent: no eviction is possible before this (no scan until then).
        var noRoomUntil: Date?
    }

    private let tenants = Mutex<[String: TenantFleet]>([:])
    let maxAgentsPerTenant: Int
    let offlineAfter: TimeInterval

    init(maxAgentsPerTenant: Int = 10_000, offlineAfter: Duration = .seconds(60)) {
        self.maxAgentsPerTenant = maxAgentsPerTenant
        self.offlineAfter = TimeInterval(offlineAfter.components.seconds)
    }

    /// Room for one more agent in `fleet` at `now`: true if there was room or the silent ones
    /// made room.
    private func makeRoom(in fleet: inout TenantFleet, now: Date) -> Bool {
        guard fleet.agents.count >= self.maxAgentsPerTenant else { return true }
        if let until = fleet.noRoomUntil, now < until { return false }
        let silent = fleet.agents.values.filter { now.timeIntervalSince($0.lastSeenAt) >= self.offlineAfter }
        guard !silent.isEmpty else {
            // The first agent can go silent at the earliest when the longest-silent one would.
            let oldest = fleet.agents.values.map(\.lastSeenAt).min() ?? now
            fleet.noRoomUntil = oldest.addingTimeInterval(self.offlineAfter)
            return false
        }
        fleet.noRoomUntil = nil
        let evict = silent.sorted { $0.lastSeenAt < $1.lastSeenAt }.prefix(max(1, self.maxAgentsPerTenant / 10))
        for record in evict { fleet.agents[record.agentID] = nil }
        return true
    }

    private static func truncated(_ summary: String?) -> String? {
        guard let summary, summary.count > Self.maxTaskSummary else { return summary }
        return String(summary.prefix(Self.maxTaskSummary - 1)) + "…"
    }

    /// The index as a loader read it from one snapshot of the log.
    func load(heads: [String: Int64], agents: [String: [AgentRecord]]) {
        self.tenants.withLock { tenants in
            for (tenant, head) in heads {
                var fleet = tenants[tenant] ?? TenantFleet()
                fleet.snapshotHead = max(fleet.snapshotHead, head)
                tenants[tenant] = fleet
            }
            for (tenant, records) in agents {
                var fleet = tenants[tenant] ?? TenantFleet()
                // The most recently seen first, so that the bound keeps those.
                for var record in records.sorted(by: { $0.lastSeenAt > $1.lastSeenAt }) {
                    guard fleet.agents[record.agentID] != nil || fleet.agents.count < self.maxAgentsPerTenant else { continue }
                    record.taskSummary = Self.truncated(record.taskSummary)
                    fleet.agents[record.agentID] = record
                }
                tenants[tenant] = fleet
            }
        }
    }

    /// Applies one live event; one the index already covers changes nothing.
    func apply(
        tenant: String,
        seq: Int64,
        swarmID: String,
        agentID: String,
        isError: Bool,
        committedAt: Date,
        state: (state: String, taskSummary: String?, attrs: EventFrame.State.Attributes?)?
    ) {
        self.tenants.withLock { tenants in
            var fleet = tenants[tenant] ?? TenantFleet()
            // A swarm's own events (health metrics, swarm incidents) belong to no agent.
            guard seq > fleet.snapshotHead, !agentID.isEmpty else { return }
            if fleet.agents[agentID] == nil {
                guard self.makeRoom(in: &fleet, now: Date()) else { return }
            }
            var record =
                fleet.agents[agentID]
                ?? AgentRecord(agentID: agentID, swarmID: swarmID, stateChangedAt: committedAt, lastSeenAt: committedAt)
            if seq > record.swarmSeq {
                record.swarmID = swarmID
                record.swarmSeq = seq
            }
            record.lastSeenAt = max(record.lastSeenAt, committedAt)
            record.lastSeq = max(record.lastSeq, seq)
            record.minutes.add(at: committedAt, events: 1, errors: isError ? 1 : 0)
            if let state, seq > record.stateSeq {
                if state.state != record.state { record.stateChangedAt = committedAt }
                record.state = state.state
                record.stateSeq = seq
                record.acceptsRequests = state.attrs?.worker == true
                record.tmuxSession = state.attrs?.tmuxSession
                record.host = state.attrs?.host
                if let summary = state.taskSummary { record.taskSummary = Self.truncated(summary) }
            }
            fleet.agents[agentID] = record
            tenants[tenant] = fleet
        }
    }

    /// One agent of `tenant`, or nil.
    func agent(tenant: String, id: String) -> AgentRecord? {
        self.tenants.withLock { $0[tenant]?.agents[id] }
    }

    /// Every agent of `tenant`.
    func agents(tenant: String) -> [AgentRecord] {
        self.tenants.withLock { $0[tenant].map { Array($0.agents.values) } ?? [] }
    }

    /// The agents of one swarm of `tenant`.
    func agents(tenant: String, swarm: String) -> [AgentRecord] {
        self.agents(tenant: tenant).filter { $0.swarmID == swarm }
    }
}

import Contracts
import Foundation
import Synchronization

/// The fleet as control-api answers it: every agent of every tenant with its last-known state
/// and its events and errors of the last hour by minute. Built from the event log at start
/// and kept current from the live feed (both by ``FleetFeed``): a live event at or below the
/// snapshot's head is ignored, so the two never count one twice. Live events may arrive out of
/// seq order (ingest replicas publish independently): each is counted, and a state event older
/// than the agent's last one does not replace it.
final class FleetIndex: Sendable {
    /// One agent as the index knows it.
    struct AgentRecord: Sendable {
        var agentID: String
        var swarmID: String
        /// The `state` of its last state event; nil before it sent one.
        var state: String?
        var taskSummary: String?
        /// The seq of the state event `state` comes from.
        var stateSeq: Int64 = 0
        /// A worker: its last state event said it takes requests (`attrs.worker`).
        var acceptsRequests = false
        var stateChangedAt: Date
        var lastSeenAt: Date
        var minutes = MinuteCounts()
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
    }

    private let tenants = Mutex<[String: TenantFleet]>([:])

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
                for record in records { fleet.agents[record.agentID] = record }
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
        state: (state: String, taskSummary: String?, worker: Bool)?
    ) {
        self.tenants.withLock { tenants in
            var fleet = tenants[tenant] ?? TenantFleet()
            guard seq > fleet.snapshotHead else { return }
            var record =
                fleet.agents[agentID]
                ?? AgentRecord(agentID: agentID, swarmID: swarmID, stateChangedAt: committedAt, lastSeenAt: committedAt)
            record.swarmID = swarmID
            record.lastSeenAt = max(record.lastSeenAt, committedAt)
            record.minutes.add(at: committedAt, events: 1, errors: isError ? 1 : 0)
            if let state, seq > record.stateSeq {
                if state.state != record.state { record.stateChangedAt = committedAt }
                record.state = state.state
                record.stateSeq = seq
                record.acceptsRequests = state.worker
                if let summary = state.taskSummary { record.taskSummary = summary }
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

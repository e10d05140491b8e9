import Contracts
public import Foundation
import NIOCore
import PostgresNIO

/// What the log says of every agent, read in one consistent snapshot.
public struct FleetSnapshot: Sendable {
    /// Every tenant's last committed seq at the snapshot.
    public var heads: [String: Int64] = [:]
    /// Every agent of every tenant.
    public var agents: [Agent] = []

    public struct Agent: Sendable {
        public var tenant: String
        public var swarmID: String
        public var agentID: String
        /// When its last event was committed.
        public var lastSeenAt: Date
        /// Its last event's seq.
        public var lastSeq: Int64 = 0
        /// Its last state event, if it sent one.
        public var lastState: StateEvent?
        /// Its events and errors (severity error or worse) per minute of the last hour.
        public var minutes: [Minute] = []
    }

    public struct StateEvent: Sendable {
        public var seq: Int64
        public var fields: EventFrame.State
        public var committedAt: Date
    }

    public struct Minute: Sendable {
        public var start: Date
        public var events: Int64
        public var errors: Int64
    }
}

extension EventLogReader {
    /// Heads, agents, their last states and last hour, from one REPEATABLE READ snapshot. Scans
    /// the whole log, without the pool's statement timeout: for a replica's start-up.
    public func fleetSnapshot() async throws -> FleetSnapshot {
        let stateKind = Int16(BusEventKind.state.rawValue)
        let errorSeverity = Int16(BusSeverity.error.rawValue)
        return try await self.client.withConnection { connection in
            try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: self.logger)
            do {
                try await connection.query("SET LOCAL statement_timeout = 0", logger: self.logger)
                var snapshot = FleetSnapshot()
                for try await (tenant, head) in try await connection.query(
                    "SELECT tenant_id, next_seq - 1 FROM \(unescaped: self.schema).tenants",
                    logger: self.logger
                ).decode((String, Int64).self) {
                    snapshot.heads[tenant] = head
                }
                var index: [String: [String: Int]] = [:]
                for try await (tenant, swarm, agent, lastSeen, lastSeq) in try await connection.query(
                    """
                    SELECT DISTINCT ON (tenant_id, agent_id) tenant_id, swarm_id, agent_id, committed_at, seq
                    FROM \(unescaped: self.schema).events WHERE agent_id <> '' ORDER BY tenant_id, agent_id, seq DESC
                    """,
                    logger: self.logger
                ).decode((String, String, String, Date, Int64).self) {
                    index[tenant, default: [:]][agent] = snapshot.agents.count
                    snapshot.agents.append(
                        FleetSnapshot.Agent(tenant: tenant, swarmID: swarm, agentID: agent, lastSeenAt: lastSeen, lastSeq: lastSeq)
                    )
                }
                for try await (tenant, agent, seq, frame, at) in try await connection.query(
                    """
                    SELECT DISTINCT ON (tenant_id, agent_id) tenant_id, agent_id, seq, frame, committed_at
                    FROM \(unescaped: self.schema).events WHERE kind = \(stateKind) ORDER BY tenant_id, agent_id, seq DESC
                    """,
                    logger: self.logger
                ).decode((String, String, Int64, ByteBuffer, Date).self) {
                    guard let position = index[tenant]?[agent], let fields = EventFrame.state(in: frame.readableBytesView) else { continue }
                    snapshot.agents[position].lastState = FleetSnapshot.StateEvent(seq: seq, fields: fields, committedAt: at)
                }
                for try await (tenant, agent, minute, events, errors) in try await connection.query(
                    """
                    SELECT tenant_id, agent_id, date_trunc('minute', committed_at), count(*), count(*) FILTER (WHERE severity >= \(errorSeverity))
                    FROM \(unescaped: self.schema).events WHERE committed_at > now() - interval '1 hour' AND agent_id <> ''
                    GROUP BY 1, 2, 3
                    """,
                    logger: self.logger
                ).decode((String, String, Date, Int64, Int64).self) {
                    guard let position = index[tenant]?[agent] else { continue }
                    snapshot.agents[position].minutes.append(FleetSnapshot.Minute(start: minute, events: events, errors: errors))
                }
                try await connection.query("COMMIT", logger: self.logger)
                return snapshot
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: self.logger)
                throw error
            }
        }
    }
}

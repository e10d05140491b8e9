import Contracts
import NIOCore
import PostgresNIO

extension EventLogReader {
    /// An agent's newest events, oldest first: at most `limit` of those with a seq below
    /// `before` (all when nil), read through the `(tenant_id, agent_id, seq)` index.
    public func agentEvents(tenant: String, agent: String, before: Int64?, limit: Int) async throws -> [LoggedEvent] {
        let rows = try await self.client.query(
            """
            SELECT seq, kind, severity, swarm_id, agent_id, frame FROM (
                SELECT seq, kind, severity, swarm_id, agent_id, frame FROM \(unescaped: self.schema).events
                WHERE tenant_id = \(tenant) AND agent_id = \(agent) AND seq < \(before ?? Int64.max)
                ORDER BY seq DESC LIMIT \(limit)
            ) AS newest ORDER BY seq
            """,
            logger: self.logger
        )
        var events: [LoggedEvent] = []
        for try await (seq, kind, severity, swarm, agentID, frame) in rows.decode((Int64, Int16, Int16, String, String, ByteBuffer).self) {
            events.append(
                LoggedEvent(
                    seq: seq,
                    kind: BusEventKind(rawValue: Int(kind)) ?? .unspecified,
                    severity: BusSeverity(rawValue: Int(severity)) ?? .unspecified,
                    swarmID: swarm,
                    agentID: agentID,
                    frame: frame
                )
            )
        }
        return events
    }
}

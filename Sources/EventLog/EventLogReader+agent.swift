import NIOCore
import PostgresNIO

extension EventLogReader {
    /// An agent's newest events, oldest first: of the (at most) `limit` with a seq below
    /// `before` (all when nil), the newest whose frames fit in `maxBytes` (at least one; Postgres
    /// sends no other frame), read through the `(tenant_id, agent_id, seq)` index. `read` is how
    /// many the limit let through before the bytes cut.
    public func agentEvents(
        tenant: String,
        agent: String,
        before: Int64?,
        limit: Int,
        maxBytes: Int
    ) async throws -> (events: [LoggedEvent], read: Int) {
        let rows = try await self.client.query(
            """
            SELECT seq, kind, severity, swarm_id, agent_id, frame, read FROM (
                SELECT seq, kind, severity, swarm_id, agent_id, frame, count(*) OVER () AS read,
                    sum(octet_length(frame)) OVER (ORDER BY seq DESC) - octet_length(frame) AS newer_bytes
                FROM (
                    SELECT seq, kind, severity, swarm_id, agent_id, frame FROM \(unescaped: self.schema).events
                    WHERE tenant_id = \(tenant) AND agent_id = \(agent) AND seq < \(before ?? Int64.max)
                    ORDER BY seq DESC LIMIT \(limit)
                ) AS newest
            ) AS sized
            WHERE newer_bytes < \(Int64(maxBytes))
            ORDER BY seq
            """,
            logger: self.logger
        )
        return try await Self.sizedEvents(rows)
    }

    /// The events of a read cut by bytes (`seq, kind, severity, swarm_id, agent_id, frame, read`,
    /// `read` being how many the limit let through before the cut).
    static func sizedEvents(_ rows: PostgresRowSequence) async throws -> (events: [LoggedEvent], read: Int) {
        var events: [LoggedEvent] = []
        var read = 0
        for try await (seq, kind, severity, swarm, agentID, frame, count) in rows.decode(
            (Int64, Int16, Int16, String, String, ByteBuffer, Int64).self
        ) {
            events.append(LoggedEvent(seq: seq, storedKind: kind, storedSeverity: severity, swarmID: swarm, agentID: agentID, frame: frame))
            read = Int(count)
        }
        return (events, read)
    }
}

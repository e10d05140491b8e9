import Contracts
import NIOCore
import PostgresNIO

extension EventLogReader {
    /// The trace id a trace event's frame holds: its first unescaped `"traceId":"…"` (the one
    /// ingest writes at the frame's top level: inside a JSON string a quote is escaped), when it
    /// is 32 lowercase hex digits (W3C and OpenTelemetry trace ids); NULL otherwise. The event
    /// log's index `events_trace` (migration 9) is on this expression, so a query must spell it
    /// exactly so.
    public static let traceIDExpression = #"substring(encode(frame, 'escape') from '"traceId":"([0-9a-f]{32})"')"#

    /// The trace events (spans) of `traceID`, in commit order: at most `limit`, and of those the
    /// first whose frames fit in `maxBytes` (at least one). `read`: how many the limit let through.
    /// The kind is written into the statement, not bound, so the planner can use the partial index.
    public func traceSpans(tenant: String, traceID: String, limit: Int, maxBytes: Int) async throws -> (events: [LoggedEvent], read: Int) {
        let rows = try await self.client.query(
            """
            SELECT seq, kind, severity, swarm_id, agent_id, frame, read FROM (
                SELECT seq, kind, severity, swarm_id, agent_id, frame, count(*) OVER () AS read,
                    sum(octet_length(frame)) OVER (ORDER BY seq) - octet_length(frame) AS older_bytes
                FROM (
                    SELECT seq, kind, severity, swarm_id, agent_id, frame FROM \(unescaped: self.schema).events
                    WHERE tenant_id = \(tenant) AND kind = \(unescaped: String(BusEventKind.trace.rawValue))
                        AND \(unescaped: Self.traceIDExpression) = \(traceID)
                    ORDER BY seq LIMIT \(limit)
                ) AS first
            ) AS sized
            WHERE older_bytes < \(Int64(maxBytes))
            ORDER BY seq
            """,
            logger: self.logger
        )
        return try await Self.sizedEvents(rows)
    }
}

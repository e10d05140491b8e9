public import Logging
public import PostgresNIO

/// Fills a tenant's log for `swarmdeck-bench agent-events`: `events` log events of `agents`
/// agents dealt in turn, committed now, seqs from 1, each frame laid out as ingest renders a
/// log event's, written by one `INSERT … SELECT` (not through ingest: the bench measures reads
/// of a log of a given size, not how fast it was written). Only for a tenant of the bench's own
/// on a stack of one's own; ``drop(client:schema:tenant:logger:)`` removes it again.
public enum EventLogAgentFill {
    /// The agent whose only event is the log's newest.
    public static let newcomer = "newcomer"
    /// Creates `tenant` (which must not exist) and its events: `events - 1` of `agent-0`… dealt
    /// in turn, and the newest of ``newcomer``.
    public static func fill(client: PostgresClient, schema: String, tenant: String, events: Int, agents: Int, logger: Logger) async throws {
        try await client.transaction(logger: logger) { connection in
            try await connection.query(
                "INSERT INTO \(unescaped: schema).tenants (tenant_id, next_seq) VALUES (\(tenant), \(Int64(events) + 1))",
                logger: logger
            )
            try await connection.perform(
                "SELECT \(unescaped: schema).create_day_partition('events', (now() AT TIME ZONE 'UTC')::date)",
                logger: logger
            )
            try await connection.query(
                """
                INSERT INTO \(unescaped: schema).events (tenant_id, seq, msg_id, swarm_id, agent_id, kind, severity, occurred_at, committed_at, frame)
                SELECT \(tenant), s, 'fill-' || s, 'bench', a, 2, 3, now(), now(),
                    convert_to('{"seq":' || s || ',"eventId":"' || s || '","type":"log","ts":' || (extract(epoch FROM now()) * 1000)::bigint
                        || ',"swarmId":"bench","agentId":"' || a || '","severity":"info","level":"info","message":"line '
                        || s || ' of the bench''s log"}', 'UTF8')
                FROM generate_series(1, \(Int64(events))) AS s,
                    LATERAL (SELECT CASE WHEN s = \(Int64(events)) THEN \(Self.newcomer) ELSE 'agent-' || (s % \(agents)) END AS a) AS agent
                """,
                logger: logger
            )
        }
        try await client.query("ANALYZE \(unescaped: schema).events", logger: logger)
    }

    /// Removes `tenant`'s events and the tenant.
    public static func drop(client: PostgresClient, schema: String, tenant: String, logger: Logger) async throws {
        try await client.transaction(logger: logger) { connection in
            try await connection.query("DELETE FROM \(unescaped: schema).events WHERE tenant_id = \(tenant)", logger: logger)
            try await connection.query("DELETE FROM \(unescaped: schema).tenants WHERE tenant_id = \(tenant)", logger: logger)
        }
    }
}

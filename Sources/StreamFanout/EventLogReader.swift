import Contracts
import Logging
import NIOCore
import PostgresNIO

/// Reads ingest's event log (read-only, the one cross-schema read the architecture allows):
/// a tenant's head and its events by seq range, for replay and back-fill.
struct EventLogReader: Sendable {
    let client: PostgresClient
    /// Ingest's schema; checked to be a plain identifier by ``FanoutSettings``.
    let schema: String
    let logger: Logger

    /// The tenant's last committed seq; 0 when it has none.
    func head(tenant: String) async throws -> Int64 {
        let rows = try await self.client.query(
            "SELECT next_seq - 1 FROM \(unescaped: self.schema).tenants WHERE tenant_id = \(tenant)",
            logger: self.logger
        )
        for try await head in rows.decode(Int64.self) { return head }
        return 0
    }

    /// The tenant's oldest seq still in the log (older ones are past retention); nil when it
    /// has none.
    func oldest(tenant: String) async throws -> Int64? {
        let rows = try await self.client.query(
            "SELECT min(seq) FROM \(unescaped: self.schema).events WHERE tenant_id = \(tenant)",
            logger: self.logger
        )
        for try await oldest in rows.decode(Int64?.self) { return oldest }
        return nil
    }

    /// The events with `after < seq <= through` that `filter` matches, in seq order, at most
    /// `limit`. The filter runs in SQL.
    func events(tenant: String, after: Int64, through: Int64, filter: StreamFilter, limit: Int) async throws -> [FeedEvent] {
        let kinds: [Int16]? = filter.kinds.map { $0.map { Int16($0.rawValue) } }
        let severity: Int16? = filter.minimumSeverity.map { Int16($0.rawValue) }
        let swarms: [String]? = filter.swarmIDs.map(Array.init)
        let agents: [String]? = filter.agentIDs.map(Array.init)
        let rows = try await self.client.query(
            """
            SELECT e.seq, e.kind, e.severity, e.swarm_id, e.agent_id, e.frame, coalesce(a.thread_id, ''), coalesce(a.thread_seq, 0)
            FROM \(unescaped: self.schema).events e
            LEFT JOIN \(unescaped: self.schema).acp_envelopes a
                ON e.kind = \(Int16(BusEventKind.acp.rawValue)) AND a.tenant_id = e.tenant_id AND a.seq = e.seq AND a.received_at = e.committed_at
            WHERE e.tenant_id = \(tenant) AND e.seq > \(after) AND e.seq <= \(through)
              AND (\(kinds)::smallint[] IS NULL OR e.kind = ANY(\(kinds)::smallint[]))
              AND (\(severity)::smallint IS NULL OR e.severity >= \(severity)::smallint)
              AND (\(swarms)::text[] IS NULL OR e.swarm_id = ANY(\(swarms)::text[]))
              AND (\(agents)::text[] IS NULL OR e.agent_id = ANY(\(agents)::text[]))
            ORDER BY e.seq
            LIMIT \(limit)
            """,
            logger: self.logger
        )
        var events: [FeedEvent] = []
        for try await (seq, kind, severity, swarm, agent, frame, thread, threadSeq) in rows.decode((Int64, Int16, Int16, String, String, ByteBuffer, String, Int64).self) {
            var event = FeedEvent(
                seq: seq,
                kind: BusEventKind(rawValue: Int(kind)) ?? .unspecified,
                severity: BusSeverity(rawValue: Int(severity)) ?? .unspecified,
                swarmID: swarm,
                agentID: agent,
                frame: frame
            )
            if event.kind == .log { event.repeatKey = FeedEvent.repeatKey(swarm: swarm, agent: agent, severity: event.severity, frame: frame) }
            event.threadID = thread
            event.threadSeq = threadSeq
            events.append(event)
        }
        return events
    }
}

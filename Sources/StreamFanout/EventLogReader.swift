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

    /// The heads of `tenants` (those with no events are missing).
    func heads(tenants: [String]) async throws -> [String: Int64] {
        let rows = try await self.client.query(
            "SELECT tenant_id, next_seq - 1 FROM \(unescaped: self.schema).tenants WHERE tenant_id = ANY(\(tenants))",
            logger: self.logger
        )
        var heads: [String: Int64] = [:]
        for try await (tenant, head) in rows.decode((String, Int64).self) { heads[tenant] = head }
        return heads
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
            SELECT seq, kind, severity, swarm_id, agent_id, frame FROM \(unescaped: self.schema).events
            WHERE tenant_id = \(tenant) AND seq > \(after) AND seq <= \(through)
              AND (\(kinds)::smallint[] IS NULL OR kind = ANY(\(kinds)::smallint[]))
              AND (\(severity)::smallint IS NULL OR severity >= \(severity)::smallint)
              AND (\(swarms)::text[] IS NULL OR swarm_id = ANY(\(swarms)::text[]))
              AND (\(agents)::text[] IS NULL OR agent_id = ANY(\(agents)::text[]))
            ORDER BY seq
            LIMIT \(limit)
            """,
            logger: self.logger
        )
        var events: [FeedEvent] = []
        var envelopeIndex: [Int64: Int] = [:]
        for try await (seq, kind, severity, swarm, agent, frame) in rows.decode((Int64, Int16, Int16, String, String, ByteBuffer).self) {
            var event = FeedEvent(
                seq: seq,
                kind: BusEventKind(rawValue: Int(kind)) ?? .unspecified,
                severity: BusSeverity(rawValue: Int(severity)) ?? .unspecified,
                swarmID: swarm,
                agentID: agent,
                frame: frame
            )
            if event.kind == .log { event.repeatKey = FeedEvent.repeatKey(swarm: swarm, agent: agent, severity: event.severity, frame: frame) }
            if event.kind == .acp { envelopeIndex[seq] = events.count }
            events.append(event)
        }
        // ACP envelopes carry their thread (which the live feed has from the bus envelope).
        if !envelopeIndex.isEmpty {
            let threads = try await self.client.query(
                "SELECT seq, thread_id, thread_seq FROM \(unescaped: self.schema).acp_envelopes WHERE tenant_id = \(tenant) AND seq = ANY(\(Array(envelopeIndex.keys)))",
                logger: self.logger
            )
            for try await (seq, thread, threadSeq) in threads.decode((Int64, String, Int64).self) {
                guard let index = envelopeIndex[seq] else { continue }
                events[index].threadID = thread
                events[index].threadSeq = threadSeq
            }
        }
        return events
    }
}

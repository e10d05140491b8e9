import Contracts
public import Foundation
import NIOCore
import PostgresNIO

extension EventLogReader {
    /// Every tenant's last committed seq (0 for a tenant with none).
    public func allHeads() async throws -> [String: Int64] {
        let rows = try await self.client.query("SELECT tenant_id, next_seq - 1 FROM \(unescaped: self.schema).tenants", logger: self.logger)
        var heads: [String: Int64] = [:]
        for try await (tenant, head) in rows.decode((String, Int64).self) { heads[tenant] = head }
        return heads
    }

    /// The tenant's first seq committed at or after `since`; nil when none is.
    public func firstSeq(tenant: String, committedSince since: Date) async throws -> Int64? {
        let rows = try await self.client.query(
            "SELECT min(seq) FROM \(unescaped: self.schema).events WHERE tenant_id = \(tenant) AND committed_at >= \(since)",
            logger: self.logger
        )
        for try await seq in rows.decode(Int64?.self) { return seq }
        return nil
    }

    /// One event with its commit time.
    public struct TimedEvent: Sendable {
        public var event: LoggedEvent
        public var committedAt: Date
    }

    /// The events with `after < seq <= through` in seq order, at most `limit`, with their commit
    /// times (health-monitor rebuilds its windows from them).
    public func timedEvents(tenant: String, after: Int64, through: Int64, limit: Int) async throws -> [TimedEvent] {
        let rows = try await self.client.query(
            """
            SELECT seq, kind, severity, swarm_id, agent_id, frame, committed_at FROM \(unescaped: self.schema).events
            WHERE tenant_id = \(tenant) AND seq > \(after) AND seq <= \(through)
            ORDER BY seq LIMIT \(limit)
            """,
            logger: self.logger
        )
        var events: [TimedEvent] = []
        for try await (seq, kind, severity, swarm, agent, frame, committedAt) in rows.decode(
            (Int64, Int16, Int16, String, String, ByteBuffer, Date).self
        ) {
            let event = LoggedEvent(seq: seq, storedKind: kind, storedSeverity: severity, swarmID: swarm, agentID: agent, frame: frame)
            events.append(TimedEvent(event: event, committedAt: committedAt))
        }
        return events
    }
}

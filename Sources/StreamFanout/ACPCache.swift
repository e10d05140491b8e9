import Logging
import NIOCore
import PostgresNIO

/// The ACP cache (seed 003) over ingest's envelopes: replay by per-thread seq, thread heads,
/// and the acknowledgements stream-fanout keeps per device (its own schema).
struct ACPCache: Sendable {
    let client: PostgresClient
    /// Ingest's schema (envelopes, threads, events).
    let eventLogSchema: String
    /// Stream-fanout's own schema (acknowledgements).
    let schema: String
    let logger: Logger

    /// One stored envelope: its per-thread seq and its bytes, exactly as stored.
    struct Envelope: Sendable {
        var threadSeq: Int64
        var bytes: ByteBuffer
    }

    /// Envelopes of `thread` with `threadSeq >= from`, in order, at most `limit`.
    func envelopes(tenant: String, thread: String, from: Int64, limit: Int) async throws -> [Envelope] {
        let rows = try await self.client.query(
            """
            SELECT a.thread_seq, e.seq, e.frame
            FROM \(unescaped: self.eventLogSchema).acp_envelopes a
            JOIN \(unescaped: self.eventLogSchema).events e
                ON e.tenant_id = a.tenant_id AND e.seq = a.seq AND e.committed_at = a.received_at  -- the same instant: prunes to one partition
            WHERE a.tenant_id = \(tenant) AND a.thread_id = \(thread) AND a.thread_seq >= \(from)
            ORDER BY a.thread_seq
            LIMIT \(limit)
            """,
            logger: self.logger
        )
        var envelopes: [Envelope] = []
        for try await (threadSeq, seq, frame) in rows.decode((Int64, Int64, ByteBuffer).self) {
            let event = FeedEvent(seq: seq, kind: .acp, severity: .info, swarmID: "", agentID: "", frame: frame)
            if let bytes = event.envelope { envelopes.append(Envelope(threadSeq: threadSeq, bytes: bytes)) }
        }
        return envelopes
    }

    /// The thread's last seq; 0 when it has no envelope (or is another tenant's).
    func head(tenant: String, thread: String) async throws -> Int64 {
        let rows = try await self.client.query(
            "SELECT next_seq - 1 FROM \(unescaped: self.eventLogSchema).acp_threads WHERE tenant_id = \(tenant) AND thread_id = \(thread)",
            logger: self.logger
        )
        for try await head in rows.decode(Int64.self) { return head }
        return 0
    }

    /// Records that `device` has read `thread` through `seq` (never moving back); returns
    /// the acknowledged seq now stored.
    func ack(tenant: String, device: String, thread: String, seq: Int64) async throws -> Int64 {
        let rows = try await self.client.query(
            """
            INSERT INTO \(unescaped: self.schema).acp_acks (tenant_id, device_id, thread_id, seq) VALUES (\(tenant), \(device), \(thread), \(seq))
            ON CONFLICT (tenant_id, device_id, thread_id)
            DO UPDATE SET seq = GREATEST(acp_acks.seq, EXCLUDED.seq), acked_at = now()
            RETURNING seq
            """,
            logger: self.logger
        )
        for try await stored in rows.decode(Int64.self) { return stored }
        return seq
    }

    /// A thread as a device sees it.
    struct ThreadState: Sendable {
        var thread: String
        var head: Int64
        var acked: Int64
        var unread: Int64 { max(0, self.head - self.acked) }
    }

    /// The tenant's threads (by id, at most `limit`), with what `device` has acknowledged of
    /// each.
    func threads(tenant: String, device: String, limit: Int) async throws -> [ThreadState] {
        let rows = try await self.client.query(
            """
            SELECT t.thread_id, t.next_seq - 1, coalesce(k.seq, 0)
            FROM \(unescaped: self.eventLogSchema).acp_threads t
            LEFT JOIN \(unescaped: self.schema).acp_acks k
                ON k.tenant_id = t.tenant_id AND k.thread_id = t.thread_id AND k.device_id = \(device)
            WHERE t.tenant_id = \(tenant)
            ORDER BY t.thread_id
            LIMIT \(limit)
            """,
            logger: self.logger
        )
        var threads: [ThreadState] = []
        for try await (thread, head, acked) in rows.decode((String, Int64, Int64).self) {
            threads.append(ThreadState(thread: thread, head: head, acked: acked))
        }
        return threads
    }
}

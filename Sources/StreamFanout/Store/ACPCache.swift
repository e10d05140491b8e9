import EventLog
import Logging
import NIOCore
import PostgresNIO

/// The ACP cache (seed 003): replay by per-thread seq and thread heads from ingest's log
/// (through ``EventLogReader``), and the acknowledgements stream-fanout keeps per device in
/// its own schema.
struct ACPCache: Sendable {
    typealias Envelope = EventLogReader.Envelope

    let client: PostgresClient
    /// Ingest's log: envelopes and threads.
    let eventLog: EventLogReader
    /// Stream-fanout's own schema (acknowledgements).
    let schema: String
    let logger: Logger

    /// The most envelope bytes one page (a replay step, a fetch result) carries; at least one
    /// envelope is always sent (ingest takes none over `ingest.max-acp-body-bytes`).
    static let pageBytes = 4 << 20

    /// Envelopes of `thread` with `threadSeq >= from`, in order, at most `limit` and
    /// ``pageBytes``.
    func envelopes(tenant: String, thread: String, from: Int64, limit: Int) async throws -> [Envelope] {
        try await self.eventLog.envelopes(tenant: tenant, thread: thread, from: from, limit: limit, maxBytes: Self.pageBytes)
    }

    /// The thread's last seq; 0 when it has no envelope (or is another tenant's).
    func head(tenant: String, thread: String) async throws -> Int64 {
        try await self.eventLog.threadHead(tenant: tenant, thread: thread)
    }

    /// Records that `device` has read `thread` through `seq` (never moving back); returns
    /// the acknowledged seq now stored.
    func ack(tenant: String, device: String, thread: String, seq: Int64) async throws -> Int64 {
        let rows = try await self.client.write(
            """
            INSERT INTO \(unescaped: self.schema).acp_acks (tenant_id, device_id, thread_id, seq) VALUES (\(tenant), \(device), \(thread), \(seq))
            ON CONFLICT (tenant_id, device_id, thread_id)
            DO UPDATE SET seq = GREATEST(acp_acks.seq, EXCLUDED.seq), acked_at = now()
            RETURNING seq
            """,
            logger: self.logger
        )
        return try rows.first?.decode(Int64.self) ?? seq
    }

    /// The first seq the thread still holds, or nil (none: empty, or all past retention).
    func start(tenant: String, thread: String) async throws -> Int64? {
        try await self.eventLog.threadStart(tenant: tenant, thread: thread)
    }

    /// A thread as a device sees it.
    struct ThreadState: Sendable {
        var summary: EventLogReader.ThreadSummary
        var acked: Int64
        var thread: String { self.summary.thread }
        var head: Int64 { self.summary.head }
        var unread: Int64 { max(0, self.head - self.acked) }
    }

    /// The tenant's threads (by id, at most `limit`), with what `device` has acknowledged of
    /// each.
    func threads(tenant: String, device: String, limit: Int) async throws -> [ThreadState] {
        let threads = try await self.eventLog.threads(tenant: tenant, limit: limit)
        guard !threads.isEmpty else { return [] }
        let rows = try await self.client.query(
            """
            SELECT thread_id, seq FROM \(unescaped: self.schema).acp_acks
            WHERE tenant_id = \(tenant) AND device_id = \(device) AND thread_id = ANY(\(threads.map(\.thread)))
            """,
            logger: self.logger
        )
        var acked: [String: Int64] = [:]
        for try await (thread, seq) in rows.decode((String, Int64).self) { acked[thread] = seq }
        return threads.map { ThreadState(summary: $0, acked: acked[$0.thread] ?? 0) }
    }
}

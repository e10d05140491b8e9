import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import ServiceHarnesses
import TestSupport
import Testing

@testable import Ingest

@Suite("Ingest queue bounded in bytes (live NATS + Postgres)")
struct IngestBackpressureTests {
    @Test("large events fill the byte bound: 429 while it is full, 413 for a request larger than the bound, then accepted")
    func byteBound() async throws {
        let harness = try await IngestHarness(overrides: [
            // The first request waits on the row lock for the commit timeout: long enough for a
            // loaded machine to see it waiting before it gives up.
            "INGEST_MAX_QUEUED_BYTES": "1048576", "INGEST_MAX_QUEUED_TENANT_SHARE": "1", "INGEST_COMMIT_TIMEOUT_SECONDS": "6",
        ])
        let big = String(repeating: "x", count: 30_000)
        @Sendable func events(_ prefix: String, _ count: Int) -> [[String: Any]] {
            (0..<count).map { logEvent("\(prefix)-\($0)", message: big) }
        }
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            // A 503 (the tenant's first rate refill, or a commit, slower than its timeout on a
            // loaded machine) is retried as a client would; the subject here is the 413 and 429.
            let tooLarge = try await harness.postRetrying(client, key: key, events: events("huge", 40))
            #expect(tooLarge.0 == .contentTooLarge)

            try await harness.withDatabase { database in
                let logger = Logger(label: "test")
                try await database.withTransaction(logger: logger) { connection in
                    // Hold the tenant's row lock so the first request waits in the queue.
                    try await connection.query("SELECT 1 FROM tenants WHERE tenant_id = \(harness.tenant) FOR UPDATE", logger: logger)
                    var pid = 0
                    for try await value in try await connection.query("SELECT pg_backend_pid()", logger: logger).decode(Int.self) { pid = value }
                    async let first = harness.post(client, key: key, events: events("a", 20))
                    #expect(
                        try await eventually {
                            let rows = try await database.query(
                                "SELECT count(*)::int FROM pg_stat_activity WHERE \(pid) = ANY(pg_blocking_pids(pid))"
                            )
                            for try await count in rows.decode(Int.self) { return count > 0 }
                            return false
                        }
                    )
                    let second = try await harness.post(client, key: key, events: events("b", 20))
                    #expect(second.0 == .tooManyRequests)
                    _ = try await first
                }
            }
            // The 429 stored nothing: the same events again are new, not duplicates.
            let storedBefore = try await harness.withDatabase { database in
                var count = 0
                let rows = try await database.query(
                    "SELECT count(*)::int FROM events WHERE tenant_id = \(harness.tenant) AND msg_id LIKE 'b-%'"
                )
                for try await value in rows.decode(Int.self) { count = value }
                return count
            }
            #expect(storedBefore == 0)
            let after = try await harness.postRetrying(client, key: key, events: events("b", 20))
            #expect(after.status == .ok)
            // All new (a 429 that had queued them would make duplicates of them here), or, after a
            // 503, duplicates of what that attempt committed.
            let stored = (after.answer?.accepted ?? 0) + (after.retried ? after.answer?.duplicates ?? 0 : 0)
            #expect(stored == 20, "\(String(describing: after.answer))")
        }
    }
}

import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import StreamTestSupport
import TestSupport
import Testing

@testable import StreamFanout

@Suite(
    "Stream-fanout fanout.max-concurrent-replays: replay pages over the limit wait their turn (live NATS + Postgres, ingest in process)",
    .tags(.alone)
)
struct ReplayPermitsTests {
    /// What one client of the test got.
    struct Served: Sendable {
        var seqs: [Int64]
        /// The types of its frames that are not events (pings left out).
        var notices: [String]
        var fromSeq: Int?
        var headSeq: Int?
    }

    /// A Postgres client of the test's own, for the time of `body`.
    static func withDatabase<T: Sendable>(_ body: (PostgresClient) async throws -> T) async throws -> T {
        let client = PostgresClient(configuration: try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 2))
        let running = Task { await client.run() }
        defer { running.cancel() }
        return try await body(client)
    }

    /// Sessions waiting for the lock `holder` holds with a query of the ACP thread lookup that
    /// a replay page makes while it holds its permit.
    static func blocked(by holder: Int, _ database: PostgresClient) async throws -> Int {
        let rows = try await database.query(
            "SELECT count(*)::int FROM pg_stat_activity WHERE \(holder) = ANY(pg_blocking_pids(pid)) AND query LIKE '%thread_seq%'"
        )
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    @Test(
        "clients resuming from 0 at once: at most fanout.max-concurrent-replays pages read the log, the rest wait (no refusal), and each gets every event once",
        arguments: [1, 2]
    )
    func replaysWaitTheirTurn(limit: Int) async throws {
        let harness = try await FanoutHarness(fanout: ["FANOUT_MAX_CONCURRENT_REPLAYS": String(limit)])
        let clients = 4
        let total = 2000
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            // Seq 1 is an ACP message: the first page of every replay (seqs 1...1000) then looks
            // its thread up in acp_envelopes, while holding its permit. Locking that table holds
            // those pages in Postgres, so the pages in flight can be counted there.
            try await harness.postACP(ingest, key: key, thread: "hold", body: FanoutHarness.acpBody(1), msgID: "m1")
            try await harness.post(ingest, key: key, (0..<999).map { logEvent("r0-\($0)") })
            let last = try await harness.post(ingest, key: key, (0..<1000).map { logEvent("r1-\($0)") })
            try #require(last.last == Int64(total))

            try await harness.fanout().test(.live) { fanout in
                let port = try #require(fanout.port)
                let token = try await harness.token()
                let subscribed = Counted()
                let events = Counted()
                let logger = Logger(label: "replay-permits")
                let tasks: [Task<Served, any Error>] = try await Self.withDatabase { database in
                    try await database.withTransaction(logger: logger) { connection in
                        try await connection.query(
                            PostgresQuery(unsafeSQL: "LOCK TABLE \"\(harness.schema)\".acp_envelopes IN ACCESS EXCLUSIVE MODE"),
                            logger: logger
                        )
                        var pid = 0
                        for try await value in try await connection.query("SELECT pg_backend_pid()", logger: logger).decode(Int.self) { pid = value }
                        let holder = pid

                        let started = (0..<clients).map { _ in
                            Task { () async throws -> Served in
                                let client = StreamClient(port: port, token: token)
                                let result = try await client.run(sending: [subscribe(lastEventId: 0)], timeout: .seconds(40)) { frame in
                                    if frame["type"] as? String == "subscribed" { _ = subscribed.next() }
                                    if frame["seq"] != nil { _ = events.next() }
                                    return (frame["seq"] as? Int) == total
                                }
                                let acknowledgement = result.frames.first { $0["type"] as? String == "subscribed" }
                                return Served(
                                    seqs: result.frames.seqs,
                                    notices: result.frames.filter { $0["seq"] == nil }.map { $0["type"] as? String ?? "?" }.filter { $0 != "ping" },
                                    fromSeq: acknowledgement?["fromSeq"] as? Int,
                                    headSeq: acknowledgement?["headSeq"] as? Int
                                )
                            }
                        }
                        // Every client is subscribed: its acknowledgement goes out before its
                        // replay asks for a permit.
                        #expect(await eventually(timeout: .seconds(8)) { subscribed.value == clients })
                        let expected = min(limit, clients)
                        #expect(try await eventually(timeout: .seconds(5)) { try await Self.blocked(by: holder, database) >= expected })
                        // The others stay in line for as long as the permits are held: never
                        // more pages in Postgres than the limit. (The fanout's statement timeout,
                        // 10 s, bounds how long the lock may be held.)
                        var inFlight: [Int] = []
                        for _ in 0..<5 {
                            try await Task.sleep(for: .milliseconds(200))
                            inFlight.append(try await Self.blocked(by: holder, database))
                        }
                        #expect(inFlight.allSatisfy { $0 == expected }, "pages in flight: \(inFlight), limit \(limit)")
                        #expect(events.value == 0, "no client was served past the held pages")
                        return started
                    }
                }
                // The lock is gone: the held pages finish and the waiting ones get their turn.
                for task in tasks {
                    let served = try await task.value
                    #expect(served.notices == ["subscribed"], "no refusal, no gap: \(served.notices)")
                    #expect(served.fromSeq == 1)
                    #expect(served.headSeq == total)
                    #expect(served.seqs == Array(1...Int64(total)))
                }
            }
        }
    }
}

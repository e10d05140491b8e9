import Contracts
import EventLog
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import Ingest

/// The commit path: an append in one statement, the de-duplication window, and publishing off
/// the commit path in commit order.
@Suite struct IngestPipelineTests {
    @Test(
        "concurrent writers of random batch sizes, over several runs: seqs contiguous and in order on the bus and in the log",
        arguments: [1, 2, 3]
    )
    func orderedOnTheBusAndInTheLog(run: Int) async throws {
        let harness = try await IngestHarness()
        let nats = try await NATSConnection.connect(NATSConfiguration(servers: [try harness.environment["NATS_URL"]!], name: "observer"))
        let subjects = try Subjects(prefix: harness.prefix)
        let feed = try await nats.subscribe(to: subjects.events(tenant: harness.tenant))
        try await nats.flush()
        var random = SystemRandomNumberGenerator()
        let writers = 6
        // Each writer's batches: random sizes, so group commits take differing shapes.
        let batches = (0..<writers).map { _ in (0..<12).map { _ in Int.random(in: 1...400, using: &random) } }
        let total = batches.joined().reduce(0, +)
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (writer, sizes) in batches.enumerated() {
                    group.addTask {
                        var next = 0
                        for size in sizes {
                            let events = (next..<(next + size)).map { logEvent("r\(run)-w\(writer)-\($0)", agent: "a\(writer)") }
                            next += size
                            // (A 503 is retried: events its attempt stored answer `duplicate`.)
                            let (status, answer, _) = try await harness.postRetrying(client, key: key, events: events)
                            #expect(status == .ok)
                            #expect(answer?.results.count == size)
                            #expect(answer?.results.allSatisfy { $0.status == "accepted" || $0.status == "duplicate" } == true)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        // Everything committed is on the bus within a minute, or the test says what came.
        let reading = Task {
            var iterator = feed.makeAsyncIterator()
            var seqs: [Int64] = []
            while seqs.count < total, let message = await iterator.next() {
                seqs += try BusEventBatch.envelopes(in: message.payload, subject: message.subject, subjects: subjects).map(\.seq)
            }
            return seqs
        }
        let timeout = Task { () -> Bool in
            do { try await Task.sleep(for: .seconds(60)) } catch { return false }
            reading.cancel()
            await nats.drain()  // ends the subscription's sequence
            return true
        }
        let seqs = try await reading.value
        timeout.cancel()
        let drained = await timeout.value
        #expect(seqs == Array(1...Int64(total)), "the bus carried \(seqs.count) events out of order or with a gap")
        try await harness.withDatabase { database in
            let rows = try await database.query(
                "SELECT count(*)::int, count(DISTINCT seq)::int, min(seq)::int, max(seq)::int FROM events WHERE tenant_id = \(harness.tenant)"
            )
            for try await (count, distinct, low, high) in rows.decode((Int, Int, Int, Int).self) {
                #expect(count == total)
                #expect(distinct == count)
                #expect(low == 1)
                #expect(high == count)
            }
        }
        if !drained { await nats.drain() }
    }

    /// Kills this test's ingest's appends (its sessions are named `ingest/<schema>`), running or
    /// at their COMMIT; other tests' appends go on. scripts/test runs it apart for its load.
    @Test("Postgres's connections killed mid-pipeline under load: every acknowledged event is in the log, seqs contiguous", .tags(.alone))
    func connectionsKilledMidPipeline() async throws {
        let harness = try await IngestHarness()
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let killer = Task {
                var killed = 0
                try await harness.withDatabase { database in
                    for _ in 0..<40 {
                        try await Task.sleep(for: .milliseconds(50))
                        let rows = try await database.query(
                            """
                            SELECT count(pg_terminate_backend(pid))::int FROM pg_stat_activity
                            WHERE pid <> pg_backend_pid() AND datname = current_database() AND application_name = \("ingest/" + harness.schema)
                              AND state IN ('active', 'idle in transaction')
                              AND (query LIKE '%append_events(%' OR query IN ('COMMIT', 'COMMIT;'))
                            """
                        )
                        for try await count in rows.decode(Int.self) { killed += count }
                    }
                }
                return killed
            }
            let acknowledged = try await withThrowingTaskGroup(of: ([String], Int).self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        var acked: [String] = []
                        var refused = 0
                        for round in 0..<60 {
                            let ids = (0..<100).map { "k\(writer)-\(round)-\($0)" }
                            let (status, answer) = try await harness.post(client, key: key, events: ids.map { logEvent($0) })
                            if status == .ok {
                                #expect(answer?.accepted == ids.count)
                                acked += ids
                            } else {
                                #expect(status == .serviceUnavailable)
                                refused += 1
                            }
                        }
                        return (acked, refused)
                    }
                }
                return try await group.reduce(into: ([String](), 0)) {
                    $0.0 += $1.0
                    $0.1 += $1.1
                }
            }
            let killed = try await killer.value
            #expect(killed > 0, "no append was running when the connections were killed")
            try await harness.withDatabase { database in
                let rows = try await database.query(
                    "SELECT msg_id, seq FROM events WHERE tenant_id = \(harness.tenant) ORDER BY seq"
                )
                var stored: Set<String> = []
                var seqs: [Int64] = []
                for try await (msgID, seq) in rows.decode((String, Int64).self) {
                    stored.insert(msgID)
                    seqs.append(seq)
                }
                #expect(acknowledged.0.allSatisfy(stored.contains), "an acknowledged event is missing from the log")
                #expect(!seqs.isEmpty)
                #expect(seqs == (0..<seqs.count).map { Int64($0) + 1 }, "a killed append left a hole or a repeat in the seqs")
            }
        }
    }

    @Test("a msgId committed within the de-duplication window answers duplicate; one committed before it is stored again")
    func deduplicationWindow() async throws {
        let harness = try await IngestHarness(overrides: ["INGEST_DEDUP_WINDOW_HOURS": "1"])
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            #expect(try await harness.post(client, key: key, events: [logEvent("recent")]).1?.results.map(\.seq) == [1])
            // Committed two hours ago (today's or yesterday's partition, both of which exist).
            try await harness.withDatabase { database in
                let then = Date().addingTimeInterval(-2 * 3600)
                try await database.query(
                    """
                    INSERT INTO events (tenant_id, seq, msg_id, swarm_id, agent_id, kind, severity, occurred_at, committed_at, frame)
                    VALUES (\(harness.tenant), 0, 'two-hours-old', 's1', 'a1', 1, 1, \(then), \(then), '\\x7b7d')
                    """
                )
            }
            let again = try await harness.post(client, key: key, events: [logEvent("recent"), logEvent("two-hours-old"), logEvent("new")])
            #expect(again.1?.results.map(\.status) == ["duplicate", "accepted", "accepted"])
            #expect(again.1?.results.map(\.seq) == [1, 2, 3])
            // The stored frame starts `{"seq":N,"eventId":"N"` and goes on as ingest rendered it.
            try await harness.withDatabase { database in
                let rows = try await database.query("SELECT frame FROM events WHERE tenant_id = \(harness.tenant) AND seq = 2")
                for try await frame in rows.decode(ByteBuffer.self) {
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer: frame)) as? [String: Any])
                    #expect(object["seq"] as? Int == 2)
                    #expect(object["eventId"] as? String == "2")
                    #expect(object["message"] as? String == "hello")
                }
            }
        }
    }

    @Test("an append for a tenant that no longer exists is refused as an invalid key, and stores nothing")
    func unknownTenant() async throws {
        let harness = try await IngestHarness()
        // The server's start migrates the schema.
        try await harness.application().test(.router) { _ in }
        try await harness.withDatabase { database in
            let appender = EventLogAppender(client: database, logger: Logger(label: "test"))
            let event = PreparedEvent(
                msgID: "m1",
                swarmID: "s1",
                agentID: "a1",
                kind: .log,
                severity: .info,
                occurredAtMilliseconds: 0,
                frameTail: Array(#","type":"log"}"#.utf8)
            )
            let error = await #expect(throws: APIError.self) {
                _ = try await appender.append(tenant: "no-such-tenant", events: [event], committedAt: Date())
            }
            #expect(error?.code == .authInvalid)
            let rows = try await database.query("SELECT count(*)::int FROM events WHERE tenant_id = 'no-such-tenant'")
            for try await count in rows.decode(Int.self) { #expect(count == 0) }
        }
    }
}

import EventLog
import Foundation
import HummingbirdTesting
import Ingest
import Logging
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@Suite("Ingest across a Postgres failover: a synchronous replica promoted behind PgBouncer (live)", .tags(.heavy))
struct IngestFailoverTests {
    @Test(
        """
        the primary killed mid-traffic, its synchronous replica promoted and PgBouncer restarted on it: ingest answers again, \
        every acknowledged event is in the new primary, and seqs go on contiguous (retries keep their msgIds)
        """
    )
    func failover() async throws {
        let primary = try await PostgresServerProcess.make()
        try await primary.start()
        // The deadline the role's settings below are made from (the harness's default is 30 s).
        let harness = try await IngestHarness(overrides: ["INGEST_COMMIT_TIMEOUT_SECONDS": "5"])
        /// Runs `sql` on the Postgres at `url`.
        @Sendable func run(_ sql: String, on url: String) async throws -> [Int64] {
            try await runSQL(sql, on: url + "?sslmode=disable")
        }
        // Ingest's session as its role's settings (postgres.role-settings), before the base
        // backup copies them to the replica.
        let session = PostgresSession(
            searchPath: harness.schema,
            statementTimeout: .seconds(5),
            lockTimeout: .seconds(5),
            idleInTransactionTimeout: .seconds(10)
        )
        for statement in session.roleSQL(role: "postgres").split(separator: "\n") {
            _ = try await run(String(statement), on: primary.url)
        }
        let replica = try await PostgresServerProcess.replica(of: primary, synchronous: true)
        try await replica.start()
        let bouncer = try PgBouncerProcess(postgresURL: primary.url, users: ["postgres"])
        try await bouncer.start()
        let through = ["POSTGRES_URL": bouncer.url(user: "postgres"), "POSTGRES_ROLE_SETTINGS": "true"]

        try await harness.live.application(IngestService.self, extra: through).test(.router) { client in
            let key = try await harness.createKey(client)
            /// Posts batch `number` (100 events of msgIds of its own) until it is answered 200,
            /// for up to a minute: the seqs it got.
            func post(_ number: Int) async throws -> [Int64] {
                let events = (0..<100).map { logEvent("b\(number)-\($0)") }
                let deadline = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < deadline {
                    if let (status, answer) = try? await harness.post(client, key: key, events: events), status == .ok, let answer {
                        return answer.results.compactMap(\.seq)
                    }
                    try await Task.sleep(for: .milliseconds(200))
                }
                let last = try? await harness.post(client, key: key, events: events)
                throw HarnessError(
                    message:
                        "batch \(number) was not answered within a minute of the failover: \(String(describing: last?.0)); PgBouncer: \(bouncer.log.split(separator: "\n").filter { !$0.contains("login attempt") && !$0.contains("server_login_retry") }.suffix(30).joined(separator: "\n"))"
                )
            }
            var acknowledged: [Int64] = []
            for number in 0..<10 { acknowledged += try await post(number) }

            // The primary crashes; the replica is promoted, and PgBouncer sent to it.
            let killed = ContinuousClock.now
            try await primary.stop()
            try await replica.promote()
            try await bouncer.repoint(toPort: replica.port)
            acknowledged += try await post(10)
            let back = ContinuousClock.now - killed
            for number in 11..<20 { acknowledged += try await post(number) }

            #expect(acknowledged.sorted() == Array(1...2000), "\(acknowledged.count) acknowledged, \(Set(acknowledged).count) distinct")
            let stored = try await run(
                "SELECT seq FROM \(harness.schema).events WHERE tenant_id = '\(harness.tenant)' ORDER BY seq",
                on: replica.url
            )
            #expect(stored == Array(1...2000), "the new primary holds \(stored.count) events")
            #expect(back < .seconds(30), "ingest answered again \(back) after the primary was killed")
            print("failover: ingest answered again \(back) after the primary was killed (promotion and PgBouncer's restart included)")
        }
    }
}

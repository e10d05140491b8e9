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

@Suite("Ingest behind PgBouncer in transaction mode: the role's settings, not startup parameters (live)")
struct IngestPoolerTests {
    @Test(
        """
        a role without the settings is refused at start with the statements that give them; with them, concurrent batches \
        through PgBouncer's transaction pooling commit with contiguous seqs
        """
    )
    func behindPgBouncer() async throws {
        let role = TestEnvironment.uniqueName("svc")
        let bouncer = try PgBouncerProcess(postgresURL: try TestEnvironment.databaseURL, users: [role])
        try await bouncer.start()
        let harness = try await IngestHarness(overrides: [:])
        /// Runs `sql` as the test's superuser, straight to Postgres.
        func superuser(_ sql: String) async throws {
            _ = try await runSQL(sql, on: try TestEnvironment.databaseURL)
        }
        let database = try #require(URLComponents(string: try TestEnvironment.databaseURL)?.path.dropFirst())
        try await superuser("CREATE ROLE \(role) LOGIN")
        try await superuser("GRANT CREATE ON DATABASE \(database) TO \(role)")
        try await superuser("CREATE SCHEMA \(harness.schema) AUTHORIZATION \(role)")
        let through = ["POSTGRES_URL": bouncer.url(user: role), "POSTGRES_ROLE_SETTINGS": "true"]

        // The role has none of ingest's settings: ingest says so, and how to give them.
        var refusal = ""
        do {
            try await harness.live.application(IngestService.self, extra: through).test(.router) { _ in }
        } catch {
            refusal = String(describing: error)
        }
        #expect(refusal.contains("postgres.role-settings is on"), "\(refusal)\nPgBouncer: \(bouncer.log)")
        let statements = try #require(refusal.range(of: "run: ").map { String(refusal[$0.upperBound...]) })
        #expect(statements.contains("ALTER ROLE \"\(role)\" SET search_path = \"\(harness.schema)\""), "\(statements)")
        for statement in statements.split(separator: ";") where statement.contains("ALTER ROLE") {
            try await superuser(statement.trimmingCharacters(in: .whitespacesAndNewlines))
        }

        // PgBouncer's server connections opened before keep the settings they started with: a
        // fresh one (in production, RECONNECT on its console).
        let fresh = try PgBouncerProcess(postgresURL: try TestEnvironment.databaseURL, users: [role])
        try await fresh.start()
        let throughFresh = ["POSTGRES_URL": fresh.url(user: role), "POSTGRES_ROLE_SETTINGS": "true"]

        // With them, ingest migrates and commits through the pooler: eight writers at once share
        // its four server connections, transaction by transaction.
        try await harness.live.application(IngestService.self, extra: throughFresh).test(.router) { client in
            let key = try await harness.createKey(client)
            let seqs = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        var seqs: [Int64] = []
                        for batch in 0..<5 {
                            let events = (0..<100).map { logEvent("w\(writer)-b\(batch)-\($0)", agent: "a\(writer)") }
                            let (status, answer) = try await harness.post(client, key: key, events: events)
                            #expect(status == .ok && answer?.accepted == 100, "\(status)")
                            seqs += answer?.results.compactMap(\.seq) ?? []
                        }
                        return seqs
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(seqs.sorted() == Array(1...4000), "\(seqs.count) seqs, \(Set(seqs).count) distinct")
        }
        // The role is the cluster's, not the test's schema's: gone with what it owns.
        try await superuser("DROP OWNED BY \(role)")
        try await superuser("DROP ROLE \(role)")
    }
}

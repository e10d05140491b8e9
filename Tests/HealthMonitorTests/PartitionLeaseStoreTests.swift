import Logging
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import HealthMonitor

@Suite("Health-monitor's replica heartbeats (live Postgres)")
struct PartitionLeaseStoreTests {
    static func replicas(_ client: PostgresClient) async throws -> [String] {
        var replicas: [String] = []
        for try await replica in try await client.query("SELECT replica FROM replicas ORDER BY replica", logger: Logger(label: "test"))
            .decode(String.self)
        {
            replicas.append(replica)
        }
        return replicas
    }

    @Test("a heartbeat answers the replicas seen within their ttl, its own among them, and forgets those gone a day, never its own")
    func heartbeat() async throws {
        try await TestEnvironment.withSchema("hb") { client, schema in
            let logger = Logger(label: "test")
            try await Migrator(schema: schema, migrations: HealthMigrations.all).migrate(client, logger: logger)
            let store = PartitionLeaseStore(client: client, logger: logger)
            #expect(try await store.heartbeat("a", ttl: .seconds(30)) == ["a"])
            #expect(try await store.heartbeat("b", ttl: .seconds(30)).sorted() == ["a", "b"])

            // One whose ttl ran out a minute ago, two gone for two days.
            try await client.query(
                """
                INSERT INTO replicas (replica, seen_until)
                VALUES ('lapsed', now() - interval '1 minute'), ('gone', now() - interval '2 days'), ('back', now() - interval '2 days')
                """,
                logger: logger
            )
            // One of those comes back: it counts again, once; the other is forgotten; the lapsed
            // one no longer counts but is kept. (The forgetting skips the heartbeat's own row:
            // one statement must not change a row twice; Postgres would skip the second change
            // silently, so this cannot be seen here.)
            #expect(try await store.heartbeat("back", ttl: .seconds(30)).sorted() == ["a", "b", "back"])
            #expect(try await Self.replicas(client) == ["a", "b", "back", "lapsed"])
            #expect(try await store.heartbeat("a", ttl: .seconds(30)).sorted() == ["a", "b", "back"])
        }
    }
}

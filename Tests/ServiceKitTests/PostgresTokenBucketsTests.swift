import Logging
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@Suite("Token buckets in Postgres, shared by replicas (live Postgres)")
struct PostgresTokenBucketsTests {
    @Test(
        "a key gets its capacity at once, then waits for the refill, whichever instance asks; a new key sweeps away the idle buckets of its own kind only"
    )
    func grantsAndSweeps() async throws {
        let schema = TestEnvironment.uniqueName("tb")
        let logger = Logger(label: "test")
        let client = PostgresClient(configuration: try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 4))
        let running = Task { await client.run() }
        defer { running.cancel() }
        try await client.query("CREATE SCHEMA \(unescaped: schema)", logger: logger)
        // The table as a service's migration makes it, in the test's schema.
        try await client.withConnection { connection in
            try await connection.query("SET search_path TO \(unescaped: schema)", logger: logger)
            for statement in PostgresTokenBuckets.tableSQL("buckets").split(separator: ";") where !statement.allSatisfy(\.isWhitespace) {
                try await connection.query("\(unescaped: String(statement))", logger: logger)
            }
        }
        @Sendable func keys() async throws -> [String] {
            var keys: [String] = []
            for try await key in try await client.query("SELECT key FROM \(unescaped: schema).buckets ORDER BY key", logger: logger)
                .decode(String.self)
            {
                keys.append(key)
            }
            return keys
        }

        // Two replicas' instances of one kind: three tokens between them, one every ten seconds.
        let slow = [1, 2].map { _ in
            PostgresTokenBuckets(client: client, table: "\(schema).buckets", keyPrefix: "slow:", capacity: 3, perSecond: 0.1, logger: logger)
        }
        #expect(try await slow[0].grant("k", upTo: 2) == (2, nil))
        #expect(try await slow[1].take("k") == nil)
        let wait = try #require(try await slow[0].take("k"))
        #expect(wait > .zero && wait <= .seconds(10))
        #expect(try await slow[1].grant("k", upTo: 5).granted == 0)

        // Another kind in the same table: when a new key of its own arrives, its buckets idle
        // for a full refill (100 s) go, its recent ones stay, and another kind's stay however
        // old. (Made here rather than taken, so that no sweep but the one below can reach them.)
        let fast = PostgresTokenBuckets(client: client, table: "\(schema).buckets", keyPrefix: "fast:", capacity: 1, perSecond: 0.01, logger: logger)
        try await client.query(
            """
            INSERT INTO \(unescaped: schema).buckets (key, tokens, at)
            SELECT 'fast:old' || i, 1, now() - interval '1 hour' FROM generate_series(0, 19) AS i
            UNION ALL SELECT 'fast:recent', 0, now()
            UNION ALL SELECT 'other:old', 3, now() - interval '1 hour'
            """,
            logger: logger
        )
        #expect(try await keys().count == 23)
        #expect(try await fast.take("new") == nil)
        let kept = ["fast:new", "fast:recent", "other:old", "slow:k"]
        let swept = try await eventually { try await keys() == kept }
        let left = try await keys()
        #expect(swept, "left: \(left)")
        // A swept key starts again full.
        #expect(try await fast.take("old0") == nil)
        #expect(try await fast.take("old0") != nil)

        try await client.query("DROP SCHEMA \(unescaped: schema) CASCADE", logger: logger)
    }
}

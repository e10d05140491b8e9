import Logging
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@Suite("Token buckets in Postgres, shared by replicas (live Postgres)")
struct PostgresTokenBucketsTests {
    /// A client and a schema of the test's own holding the buckets' table as a service's
    /// migration makes it; `body` gets the client and the table's qualified name.
    static func withTable(_ body: (PostgresClient, String) async throws -> Void) async throws {
        try await TestEnvironment.withSchema("tb") { client, schema in
            let logger = Logger(label: "test")
            try await client.withConnection { connection in
                for statement in PostgresTokenBuckets.tableSQL("buckets").split(separator: ";") where !statement.allSatisfy(\.isWhitespace) {
                    try await connection.query("\(unescaped: String(statement))", logger: logger)
                }
            }
            try await body(client, "\(schema).buckets")
        }
    }

    static func keys(_ client: PostgresClient, _ table: String) async throws -> [String] {
        var keys: [String] = []
        for try await key in try await client.query("SELECT key FROM \(unescaped: table) ORDER BY key COLLATE \"C\"", logger: Logger(label: "test"))
            .decode(String.self)
        {
            keys.append(key)
        }
        return keys
    }

    @Test("a key gets its capacity at once, then waits for the refill, whichever instance asks")
    func grants() async throws {
        try await Self.withTable { client, table in
            // Two replicas' instances of one kind: three tokens between them, one every 1000 s.
            let replicas = [1, 2].map { _ in
                PostgresTokenBuckets(client: client, table: table, keyPrefix: "k:", capacity: 3, perSecond: 0.001, logger: Logger(label: "test"))
            }
            let first = try await replicas[0].grant("a", upTo: 2)
            #expect(first.granted == 2 && first.wait == nil)
            #expect(try await replicas[1].take("a") == nil)
            let wait = try #require(try await replicas[0].take("a"))
            #expect(wait > .zero && wait <= .seconds(1000))
            #expect(try await replicas[1].grant("a", upTo: 5).granted == 0)
            // Another key is untouched.
            #expect(try await replicas[1].grant("b", upTo: 5).granted == 3)
        }
    }

    @Test(
        "a new key sweeps away the idle buckets of its own kind only, one sweep at a time, and the grant is answered while the sweep waits"
    )
    func sweeps() async throws {
        try await Self.withTable { client, table in
            let logger = Logger(label: "test")
            // Every row the sweep deletes first waits for an advisory lock the test holds.
            let lock = Int64.random(in: 1...Int64.max)
            try await client.query(
                """
                CREATE FUNCTION \(unescaped: table)_hold() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_advisory_xact_lock(\(unescaped: String(lock))); RETURN OLD; END $$
                """,
                logger: logger
            )
            try await client.query(
                "CREATE TRIGGER hold BEFORE DELETE ON \(unescaped: table) FOR EACH ROW EXECUTE FUNCTION \(unescaped: table)_hold()",
                logger: logger
            )
            let fast = PostgresTokenBuckets(client: client, table: table, keyPrefix: "fast:", capacity: 1, perSecond: 0.01, logger: logger)
            @Sendable func waitingSweeps() async throws -> Int {
                let rows = try await client.query(
                    """
                    SELECT count(*)::int FROM pg_stat_activity
                    WHERE wait_event = 'advisory' AND query LIKE \("DELETE FROM \(table)%")
                    """,
                    logger: logger
                )
                for try await count in rows.decode(Int.self) { return count }
                return 0
            }

            @Sendable func makeIdle(_ stem: String, _ count: Int) async throws {
                try await client.query(
                    """
                    INSERT INTO \(unescaped: table) (key, tokens, at)
                    SELECT \("fast:" + stem) || i, 1, now() - interval '1 hour' FROM generate_series(1, \(count)) AS i
                    """,
                    logger: logger
                )
            }

            // Buckets of this kind idle for over a full refill (100 s), a recent one, and one
            // of another kind however old.
            try await makeIdle("old", 20)
            try await client.query(
                """
                INSERT INTO \(unescaped: table) (key, tokens, at)
                VALUES ('fast:recent', 0, now()), ('other:old', 3, now() - interval '1 hour')
                """,
                logger: logger
            )

            let holder = PostgresClient(configuration: try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 1))
            let holding = Task { await holder.run() }
            defer { holding.cancel() }
            try await holder.withConnection { connection in
                try await connection.query("SELECT pg_advisory_lock(\(lock))", logger: logger)
                // A new key is answered at once, though the sweep it started waits.
                let first = try await withDeadline(.seconds(30), orThrow: CancellationError()) { try await fast.take("new") }
                #expect(first == nil)
                #expect(try await eventually(timeout: .seconds(30)) { try await waitingSweeps() == 1 })
                // Idle buckets the waiting sweep has not locked: a second sweep would take them
                // and wait too. The second new key starts none while the first runs.
                try await makeIdle("later", 5)
                #expect(try await fast.take("new2") == nil)
                try await Task.sleep(for: .milliseconds(500))
                #expect(try await waitingSweeps() == 1)
                #expect(try await Self.keys(client, table).count == 29)
                try await connection.query("SELECT pg_advisory_unlock(\(lock))", logger: logger)
            }

            // The first sweep ends; the next new key sweeps what it had not locked.
            let swept = try await eventually(timeout: .seconds(30)) {
                _ = try await fast.take(TestEnvironment.uniqueName("new"))
                return try await Self.keys(client, table).allSatisfy { !$0.hasPrefix("fast:old") && !$0.hasPrefix("fast:later") }
            }
            let left = try await Self.keys(client, table)
            #expect(swept, "left: \(left)")
            #expect(left.contains("fast:recent") && left.contains("other:old") && left.contains("fast:new2"))
        }
    }
}

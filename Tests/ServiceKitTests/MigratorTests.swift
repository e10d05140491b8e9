import Logging
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@Suite("Migrations (live Postgres)")
struct MigratorTests {
    static let migrations = [
        Migration(version: 1, name: "events", sql: "CREATE TABLE events (id bigserial PRIMARY KEY, body text NOT NULL);"),
        Migration(
            version: 2,
            name: "events index and view",
            sql: """
                CREATE INDEX events_body ON events (body);
                CREATE FUNCTION event_count() RETURNS bigint LANGUAGE sql SET search_path FROM CURRENT AS $$ SELECT count(*) FROM events $$;
                """
        ),
    ]

    private func withClient<T: Sendable>(_ body: @Sendable (PostgresClient) async throws -> T) async throws -> T {
        let client = PostgresClient(configuration: try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 4))
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

    @Test("a migration outlasts the session's statement_timeout (which the service sets for its requests)")
    func ignoresSessionTimeouts() async throws {
        let schema = TestEnvironment.uniqueName("s")
        var configuration = try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 1)
        configuration.options.additionalStartupParameters = [("statement_timeout", "100"), ("lock_timeout", "100")]
        let client = PostgresClient(configuration: configuration)
        let running = Task { await client.run() }
        defer { running.cancel() }
        let slow = Migration(version: 1, name: "slow", sql: "CREATE TABLE t (x int); SELECT pg_sleep(0.5);")
        #expect(try await Migrator(schema: schema, migrations: [slow]).migrate(client, logger: Logger(label: "test")) == [1])
        // The session's own limit is back once the migration is done.
        await #expect(throws: PSQLError.self) {
            for try await _ in try await client.query("SELECT pg_sleep(0.5)") {}
        }
    }

    @Test("applying twice is a no-op")
    func idempotent() async throws {
        let schema = TestEnvironment.uniqueName("m")
        let logger = Logger(label: "test")
        try await self.withClient { client in
            let migrator = try Migrator(schema: schema, migrations: Self.migrations)
            #expect(try await migrator.migrate(client, logger: logger) == [1, 2])
            #expect(try await migrator.migrate(client, logger: logger) == [])
            let rows = try await client.query("SELECT count(*)::int FROM \(unescaped: schema).schema_migrations")
            for try await count in rows.decode(Int.self) { #expect(count == 2) }
        }
    }

    @Test("several migrators at once on separate connections end with one correct schema")
    func concurrent() async throws {
        let logger = Logger(label: "test")
        for _ in 0..<5 {
            let schema = TestEnvironment.uniqueName("c")
            // Separate clients: separate sessions, as separate replicas would have.
            let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        do {
                            return try await self.withClient { client in
                                try await Migrator(schema: schema, migrations: Self.migrations).migrate(client, logger: logger)
                            }
                        } catch {
                            Issue.record("\(String(reflecting: error))")
                            throw error
                        }
                    }
                }
                return try await group.reduce(into: [[Int]]()) { $0.append($1) }
            }
            #expect(applied.filter { !$0.isEmpty } == [[1, 2]])
            do {
                try await self.withClient { client in
                    let rows = try await client.query("SELECT \(unescaped: schema).event_count()::int")
                    for try await count in rows.decode(Int.self) { #expect(count == 0) }
                }
            } catch { Issue.record("\(String(reflecting: error))") }
        }
    }

    @Test("a migration changed after it was applied is refused")
    func changedMigration() async throws {
        let schema = TestEnvironment.uniqueName("x")
        let logger = Logger(label: "test")
        try await self.withClient { client in
            try await Migrator(schema: schema, migrations: Self.migrations).migrate(client, logger: logger)
            var edited = Self.migrations
            edited[0] = Migration(version: 1, name: "events", sql: "CREATE TABLE events (id int);")
            await #expect(throws: ServiceKitError.self) {
                try await Migrator(schema: schema, migrations: edited).migrate(client, logger: logger)
            }
        }
    }

    @Test("a failing migration leaves nothing behind")
    func failingMigrationRollsBack() async throws {
        let schema = TestEnvironment.uniqueName("f")
        let logger = Logger(label: "test")
        try await self.withClient { client in
            let broken = Self.migrations + [Migration(version: 3, name: "broken", sql: "CREATE TABLE t3 (id int); SELECT no_such_function();")]
            await #expect(throws: (any Error).self) {
                try await Migrator(schema: schema, migrations: broken).migrate(client, logger: logger)
            }
            let rows = try await client.query("SELECT count(*)::int FROM pg_namespace WHERE nspname = \(schema)")
            for try await count in rows.decode(Int.self) { #expect(count == 0) }
            #expect(try await Migrator(schema: schema, migrations: Self.migrations).migrate(client, logger: logger) == [1, 2])
        }
    }

    @Test("schema names and version numbering are checked")
    func validation() {
        #expect(throws: ServiceKitError.self) { try Migrator(schema: "Bad-Name", migrations: []) }
        #expect(throws: ServiceKitError.self) { try Migrator(schema: "ok", migrations: [Self.migrations[1]]) }
    }
}

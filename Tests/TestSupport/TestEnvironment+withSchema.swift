import Logging
public import PostgresNIO

extension TestEnvironment {
    /// Runs `body` with a Postgres client of its own (on the test Postgres) whose unqualified
    /// names resolve to a schema of its own, `<stem>_<random>`: made before `body` and dropped
    /// after it, whether it throws or not. The drop waits 10 s at most for a lock `body` left
    /// held: after a failure the schema is then left behind; after a success the wait fails the
    /// test. For a test of one store or one library outside any service.
    public static func withSchema<Value: Sendable>(
        _ stem: String,
        maxConnections: Int = 4,
        _ body: (PostgresClient, String) async throws -> Value
    ) async throws -> Value {
        let schema = self.uniqueName(stem)
        let logger = Logger(label: "test")
        var configuration = try PostgresClient.Configuration(url: try self.databaseURL, maxConnections: maxConnections)
        configuration.options.additionalStartupParameters = [("search_path", schema)]
        let client = PostgresClient(configuration: configuration)
        let running = Task { await client.run() }
        defer { running.cancel() }
        try await client.query("CREATE SCHEMA \(unescaped: schema)", logger: logger)
        let dropped: () async throws -> Void = {
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SET LOCAL lock_timeout = '10s'", logger: logger)
                _ = try await connection.query("DROP SCHEMA \(unescaped: schema) CASCADE", logger: logger)
            }
        }
        let value: Value
        do {
            value = try await body(client, schema)
        } catch {
            try? await dropped()
            throw error
        }
        try await dropped()
        return value
    }
}

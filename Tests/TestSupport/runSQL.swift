import Logging
import PostgresNIO

/// Runs `sql` (one statement) on the Postgres at `url` over a client of its own, for a test's
/// setup and checks outside any service: the first column of its rows, as integers (none for a
/// statement without rows).
public func runSQL(_ sql: String, on url: String) async throws -> [Int64] {
    let client = PostgresClient(configuration: try PostgresClient.Configuration(url: url, maxConnections: 1))
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        defer { group.cancelAll() }
        var values: [Int64] = []
        for try await value in try await client.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "test-sql")).decode(Int64.self) {
            values.append(value)
        }
        return values
    }
}

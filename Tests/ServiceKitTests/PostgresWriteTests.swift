import Logging
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@Suite("A write is answered once committed: client.write (live Postgres)")
struct PostgresWriteTests {
    @Test(
        "a statement whose COMMIT fails (a deferred unique check) throws from client.write and keeps nothing (sent bare, it answers its rows); one that commits returns its rows"
    )
    func commitDecides() async throws {
        let schema = TestEnvironment.uniqueName("w")
        let logger = Logger(label: "test")
        let client = PostgresClient(configuration: try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 2))
        let running = Task { await client.run() }
        defer { running.cancel() }
        try await client.query("CREATE SCHEMA \(unescaped: schema)", logger: logger)
        // Checked at COMMIT, after the INSERT has answered with its rows and CommandComplete: the
        // same window as a backend terminated before its commit, but every time.
        try await client.query("CREATE TABLE \(unescaped: schema).t (id int UNIQUE DEFERRABLE INITIALLY DEFERRED)", logger: logger)

        await #expect(throws: PostgresTransactionError.self) {
            try await client.write("INSERT INTO \(unescaped: schema).t VALUES (1), (1) RETURNING id", logger: logger)
        }
        let rows = try await client.write("INSERT INTO \(unescaped: schema).t VALUES (2), (3) RETURNING id", logger: logger)
        #expect(try rows.map { try $0.decode(Int.self) } == [2, 3])
        // Sent bare, the same failure answers its rows without an error (postgres-nio ends the
        // query at CommandComplete), and nothing is kept: why every write goes through
        // client.write or client.transaction (scripts/check-writes). postgres-nio then closes the
        // connection (an error after CommandComplete is unexpected to it), and a query leased to
        // it at that moment may never be answered: a client of its own, used for nothing else.
        // Should postgres-nio come to report the failed commit, this fails, and the check may
        // be reconsidered.
        let bare = PostgresClient(configuration: try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 1))
        let bareRunning = Task { await bare.run() }
        defer { bareRunning.cancel() }
        var answered: [Int] = []
        for try await id in try await bare.query("INSERT INTO \(unescaped: schema).t VALUES (7), (7) RETURNING id", logger: logger)
            .decode(Int.self)
        {
            answered.append(id)
        }
        #expect(answered == [7, 7])
        var kept: [Int] = []
        for try await id in try await client.query("SELECT id FROM \(unescaped: schema).t ORDER BY id", logger: logger).decode(Int.self) {
            kept.append(id)
        }
        #expect(kept == [2, 3])
        try await client.query("DROP SCHEMA \(unescaped: schema) CASCADE", logger: logger)
    }
}

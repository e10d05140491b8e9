import Contracts
import Logging
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

/// (A closed connection is the other half of `isUnavailability`; the cluster compose's failover
/// meets it for real, deploy/staging/cluster/check. Here a query on a leased connection whose
/// backend was terminated is never answered by postgres-nio, so it is not tried.)
@Suite("Postgres out of reach or too busy answers 503, a failing statement 500 (live Postgres)")
struct PostgresUnavailabilityTests {
    @Test(
        "a read-only server (a demoted primary), a lock or statement timeout, in a statement or a transaction, is ServiceUnavailable with Retry-After; a syntax error is ServerError"
    )
    func unavailabilityIsRetryable() async throws {
        let logger = Logger(label: "test")
        let client = PostgresClient(configuration: try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 2))
        let running = Task { await client.run() }
        defer { running.cancel() }

        // What a primary demoted in a failover answers a write: SQLSTATE 25006.
        let readOnly = try await client.withConnection { connection in
            // (The pool is this test's alone: the session setting goes with it.)
            try await connection.query("SET default_transaction_read_only = on", logger: logger)
            return await Self.error { try await connection.query("CREATE SCHEMA \(unescaped: TestEnvironment.uniqueName("ro"))", logger: logger) }
        }
        #expect((readOnly as? PSQLError)?.isUnavailability == true)
        Self.expect(readOnly, status: 503, code: .serviceUnavailable)

        // In a transaction: PostgresTransactionError carries it.
        let inTransaction = await Self.error {
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SET TRANSACTION READ ONLY", logger: logger)
                try await connection.query("CREATE SCHEMA \(unescaped: TestEnvironment.uniqueName("ro"))", logger: logger)
            }
        }
        #expect((inTransaction as? PostgresTransactionError)?.isUnavailability == true)
        Self.expect(inTransaction, status: 503, code: .serviceUnavailable)

        // Contention: a lock held past the lock timeout (an advisory lock, as the stores take
        // per tenant), a statement past the statement timeout.
        let lockTimeout = try await client.withTransaction(logger: logger) { holder in
            try await holder.perform("SELECT pg_advisory_xact_lock(hashtext('unavailability-test'))", logger: logger)
            return await Self.error {
                try await client.withTransaction(logger: logger) { waiter in
                    try await waiter.query("SET LOCAL lock_timeout = '100ms'", logger: logger)
                    try await waiter.perform("SELECT pg_advisory_xact_lock(hashtext('unavailability-test'))", logger: logger)
                }
            }
        }
        #expect(((lockTimeout as? PostgresTransactionError)?.closureError as? PSQLError)?.serverInfo?[.sqlState] == "55P03")
        Self.expect(lockTimeout, status: 503, code: .serviceUnavailable)
        let statementTimeout = await Self.error {
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SET LOCAL statement_timeout = '100ms'", logger: logger)
                try await connection.perform("SELECT pg_sleep(2)", logger: logger)
            }
        }
        #expect(((statementTimeout as? PostgresTransactionError)?.closureError as? PSQLError)?.serverInfo?[.sqlState] == "57014")
        Self.expect(statementTimeout, status: 503, code: .serviceUnavailable)

        // Why `perform`: with the rows of a failing SELECT unread, the failure is lost, and the
        // transaction's COMMIT is answered ROLLBACK, which postgres-nio takes for a commit. The
        // insert before it is gone, and nothing said so.
        let (unread, kept) = try await client.withConnection { connection in
            // (One connection, whichever the read-only test left read-only: made writable.)
            try await connection.query("SET default_transaction_read_only = off", logger: logger)
            try await connection.query("CREATE TEMPORARY TABLE performed (id int)", logger: logger)
            let unread = await Self.error {
                try await connection.withTransaction(logger: logger) { connection in
                    try await connection.query("INSERT INTO performed VALUES (1)", logger: logger)
                    try await connection.query("SET LOCAL statement_timeout = '100ms'", logger: logger)
                    // (check-writes refuses this in Sources.)
                    _ = try await connection.query("SELECT pg_sleep(2)", logger: logger)
                }
            }
            var kept = -1
            for try await count in try await connection.query("SELECT count(*)::int FROM performed", logger: logger).decode(Int.self) {
                kept = count
            }
            try await connection.query("DROP TABLE performed", logger: logger)
            return (unread, kept)
        }
        #expect(unread == nil && kept == 0, "postgres-nio now reports an unread failure (\(String(describing: unread))): perform may go")

        // The statement's own fault stays an internal error.
        let syntax = await Self.error { try await client.query("SELEC 1", logger: logger) }
        #expect((syntax as? PSQLError)?.isUnavailability == false)
        Self.expect(syntax, status: 500, code: .serverError)
    }

    static func error(_ body: () async throws -> Void) async -> (any Error)? {
        do {
            try await body()
            return nil
        } catch {
            return error
        }
    }

    static func expect(_ error: (any Error)?, status: Int, code: ErrorCode, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let error else {
            Issue.record("no error", sourceLocation: sourceLocation)
            return
        }
        let (answered, body) = ErrorEnvelopeMiddleware.envelope(for: error, requestID: nil)
        #expect(answered.code == status, sourceLocation: sourceLocation)
        #expect(body.code == code, sourceLocation: sourceLocation)
        #expect((body.retryAfterSeconds != nil) == (status == 503), sourceLocation: sourceLocation)
    }
}

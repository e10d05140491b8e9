import Contracts
import Logging
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

/// (A closed connection is the other half of `isUnavailability`; the cluster compose's failover
/// meets it for real, deploy/staging/cluster/check. Here a query on a leased connection whose
/// backend was terminated is never answered by postgres-nio, so it is not tried.)
@Suite("Postgres out of reach answers 503, a failing statement 500 (live Postgres)")
struct PostgresUnavailabilityTests {
    @Test(
        "a read-only server (a demoted primary), in a statement or a transaction, is ServiceUnavailable with Retry-After; a syntax error is ServerError"
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

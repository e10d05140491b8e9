public import Logging
public import PostgresNIO

extension PostgresClient {
    /// Runs one statement that writes (`INSERT`, `UPDATE`, `DELETE`) and returns its rows once its
    /// `COMMIT` has completed: what a caller answers, acks or does on the strength of them has been
    /// committed.
    ///
    /// Sent bare, a statement runs in the extended protocol's implicit transaction, which Postgres
    /// commits at the `Sync` that follows it: after it has buffered the statement's rows and its
    /// `CommandComplete`. A backend terminated in between flushes them with its `FATAL` error and
    /// rolls back, and postgres-nio has already handed the rows to the caller. Between `BEGIN` and
    /// `COMMIT` the last answer is the `COMMIT`'s, sent once the commit is done. The cost is two
    /// more round trips. `scripts/check-writes` refuses a writing statement sent bare.
    ///
    /// An ``APIError`` or ``ServiceKitError`` comes out as itself, as from ``transaction(logger:isolation:_:)``.
    @discardableResult
    public func write(
        _ query: PostgresQuery,
        logger: Logger,
        isolation: isolated (any Actor)? = #isolation
    ) async throws -> [PostgresRow] {
        try await self.transaction(logger: logger, isolation: isolation) { connection in
            try await connection.query(query, logger: logger).collect()
        }
    }
}

public import Logging
public import PostgresNIO

extension PostgresConnection {
    /// Runs a statement whose rows are not wanted (a `SELECT` of a function called for what it
    /// does: an advisory lock, a partition made, a note written) and reads its answer to the end,
    /// so that a failure in its execution throws here.
    ///
    /// postgres-nio hands back a statement's rows as soon as their description has come, and a
    /// failure after it (a lock or statement timeout, a deadlock, the function's own error) reaches
    /// only a reader of the rows. Unread, it is lost and the transaction is aborted unseen: its
    /// next statement fails with 25P02, and a `COMMIT` with none after it is answered `ROLLBACK`,
    /// which postgres-nio takes for a commit. `scripts/check-writes` refuses such a statement
    /// sent with `query` and its rows dropped.
    public func perform(_ query: PostgresQuery, logger: Logger) async throws {
        _ = try await self.query(query, logger: logger).collect()
    }
}

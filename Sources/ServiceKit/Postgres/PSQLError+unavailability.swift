public import PostgresNIO

extension PSQLError {
    /// Whether the failure is Postgres out of reach or too busy for now rather than the
    /// statement: the connection closed or failed, the pool closed, or a server that refuses for
    /// a while what it would otherwise take: a primary demoted to a replica in a failover
    /// (SQLSTATE 25006, read-only), a server shutting down or starting (57P01…57P03), a
    /// connection exception (class 08), out of resources (class 53: too many connections, no
    /// disk or memory), or contention: a lock or a statement past its timeout (55P03, 57014), a
    /// serialization failure or a deadlock (40001, 40P01).
    /// A request that met one answers 503 `ServiceUnavailable` and may be retried.
    public var isUnavailability: Bool {
        switch self.code {
        case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown, .poolClosed:
            return true
        case .server:
            guard let state = self.serverInfo?[.sqlState] else { return false }
            return state.hasPrefix("08") || state.hasPrefix("53")
                || ["25006", "57P01", "57P02", "57P03", "55P03", "57014", "40001", "40P01"].contains(state)
        default:
            return false
        }
    }
}

extension PostgresTransactionError {
    /// Whether the transaction failed because Postgres was out of reach (see
    /// ``PSQLError/isUnavailability``) at its `BEGIN`, in its statements or at its `COMMIT`.
    /// At the commit the outcome is unknown; requests retried with their idempotency keys find
    /// what was committed.
    public var isUnavailability: Bool {
        [self.beginError, self.closureError, self.commitError].contains { ($0 as? PSQLError)?.isUnavailability == true }
    }
}

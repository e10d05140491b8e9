public import Logging
public import PostgresNIO

extension PostgresClient {
    /// `withTransaction`, except that an ``APIError`` the body throws (a refusal: a conflict, a
    /// rate limit, a deadline) or a ``ServiceKitError`` comes out as itself once the transaction is rolled
    /// back, instead of wrapped in `PostgresTransactionError`: the refusal is the answer.
    public func transaction<Result>(
        logger: Logger,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        do {
            return try await self.withTransaction(logger: logger, isolation: isolation, body)
        } catch let error as PostgresTransactionError {
            if let refusal = error.closureError as? APIError { throw refusal }
            if let failure = error.closureError as? ServiceKitError { throw failure }
            throw error
        }
    }
}

public import Logging
import ServiceLifecycle

/// Runs `consume` (a loop over a durable consumer) until graceful shutdown, starting it again
/// after each failure with a wait of 1, 2 … 5 s. For a consumer of a stream another service
/// creates: until it exists, each try fails and `waiting` is logged at info.
public func consumeUntilShutdown(
    logger: Logger,
    waiting: @autoclosure @escaping @Sendable () -> Logger.Message,
    _ consume: @escaping @Sendable () async throws -> Void
)
    async
{
    try? await cancelWhenGracefulShutdown {
        var attempt = 0
        while !Task.isCancelled {
            do {
                try await consume()
            } catch is CancellationError {
                return
            } catch {
                attempt += 1
                logger.info(waiting(), metadata: ["error": "\(String(reflecting: error))"])
                try await Task.sleep(for: .seconds(min(attempt, 5)))
            }
        }
    }
}

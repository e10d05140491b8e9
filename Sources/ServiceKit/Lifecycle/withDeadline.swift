/// Runs `body`, or throws `timeoutError` once `timeout` passes, whichever comes first.
///
/// This returns at the deadline even when `body` does not react to cancellation. On timeout
/// `body` is cancelled and left to end on its own, so work it has started (a postgres-nio query
/// already written, which may commit) can still complete after the caller was told it timed
/// out: callers answer as if its outcome were unknown. A query written to a connection that
/// closed at that moment can wait forever in postgres-nio; a deadline that waited for the body
/// would then hold its caller (a group commit, a readiness probe) forever too.
///
/// Cancelling the caller cancels `body` and throws `CancellationError` at once, unless `body`
/// had already ended.
public func withDeadline<Result: Sendable>(
    _ timeout: Duration,
    orThrow timeoutError: @autoclosure @escaping @Sendable () -> any Error,
    _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    let first = FirstAnswer<Result>()
    let work = Task {
        do {
            first.answer(.success(try await body()))
        } catch {
            first.answer(.failure(error))
        }
    }
    let timer = Task {
        // Cancelled once `body` ended first; the error is then not built.
        guard (try? await Task.sleep(for: timeout)) != nil else { return }
        first.answer(.failure(timeoutError()))
    }
    defer {
        work.cancel()
        timer.cancel()
    }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            first.arm(continuation)
        }
    } onCancel: {
        // The wait returns with it, and the defer above cancels the body and the timer.
        first.answer(.failure(CancellationError()))
    }
}

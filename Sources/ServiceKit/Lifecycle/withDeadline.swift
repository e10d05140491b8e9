import Synchronization

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
    let first = FirstOutcome<Result>()
    let work = Task {
        do {
            first.finish(.success(try await body()))
        } catch {
            first.finish(.failure(error))
        }
    }
    let timer = Task {
        // Cancelled once `body` ended first; the error is then not built.
        guard (try? await Task.sleep(for: timeout)) != nil else { return }
        first.finish(.failure(timeoutError()))
    }
    defer {
        work.cancel()
        timer.cancel()
    }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            first.wait(continuation)
        }
    } onCancel: {
        first.finish(.failure(CancellationError()))
        work.cancel()
        timer.cancel()
    }
}

/// The first of two outcomes, handed to the one waiter whichever of them arrives first.
private final class FirstOutcome<Value: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<Value, any Error>)
        case finished(Result<Value, any Error>)
        case delivered
    }

    private let state = Mutex(State.empty)

    func wait(_ continuation: CheckedContinuation<Value, any Error>) {
        let ready = self.state.withLock { state -> Result<Value, any Error>? in
            switch state {
            case .empty:
                state = .waiting(continuation)
                return nil
            case .finished(let result):
                state = .delivered
                return result
            case .waiting, .delivered:
                preconditionFailure("withDeadline waits once")
            }
        }
        if let ready { continuation.resume(with: ready) }
    }

    func finish(_ result: Result<Value, any Error>) {
        let waiter = self.state.withLock { state -> CheckedContinuation<Value, any Error>? in
            switch state {
            case .empty:
                state = .finished(result)
                return nil
            case .waiting(let continuation):
                state = .delivered
                return continuation
            case .finished, .delivered:
                return nil
            }
        }
        waiter?.resume(with: result)
    }
}

/// Runs `body`, or throws `timeoutError` once `timeout` passes, whichever comes first.
///
/// On timeout `body` is cancelled; this returns once it has ended. Work that does not react to
/// cancellation (a running postgres-nio query) still ends only when it completes, so pair this
/// with a server-side limit where that matters.
public func withDeadline<Result: Sendable>(
    _ timeout: Duration,
    orThrow timeoutError: @autoclosure @escaping @Sendable () -> any Error,
    _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw timeoutError()
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

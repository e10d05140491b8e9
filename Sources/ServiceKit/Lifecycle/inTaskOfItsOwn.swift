/// Runs `body` in a task of its own and returns what it returns; cancelling the caller cancels
/// it.
///
/// For a long-lived task (a connection's reader or writer) that now and then does deep async
/// work (a database read, a feed join): a task keeps the memory its deepest moment needed
/// (its async frames) for as long as it lives, so that work is done where the memory is given
/// back when it is done.
public func inTaskOfItsOwn<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result) async throws -> Result {
    let task = Task { try await body() }
    return try await withTaskCancellationHandler {
        try await task.value
    } onCancel: {
        task.cancel()
    }
}

/// The same, for work that does not throw.
public func inTaskOfItsOwn<Result: Sendable>(_ body: @escaping @Sendable () async -> Result) async -> Result {
    let task = Task { await body() }
    return await withTaskCancellationHandler {
        await task.value
    } onCancel: {
        task.cancel()
    }
}

import Synchronization

/// At most `count` holders at once; the rest wait in arrival order (a cancelled waiter leaves
/// the line). For work that must not crowd out the rest of a replica (replays from the log).
public final class AsyncPermits: Sendable {
    private struct State {
        var available: Int
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>
    /// The most holders at once.
    public let count: Int

    public init(_ count: Int) {
        precondition(count > 0)
        self.count = count
        self.state = Mutex(State(available: count))
    }

    /// Holders waiting now.
    public var waiting: Int { self.state.withLock { $0.waiters.count } }

    /// Runs `body` holding a permit.
    /// - Throws: `CancellationError` if cancelled while waiting; what `body` throws.
    public func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await self.acquire()
        defer { self.release() }
        return try await body()
    }

    private func acquire() async throws {
        let id: UInt64? = self.state.withLock { state in
            if state.available > 0 {
                state.available -= 1
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = self.state.withLock { state in
                    // A permit may have come back between the check and here.
                    if state.available > 0 {
                        state.available -= 1
                        return .success(())
                    }
                    // Cancelled before this waiter was listed: the cancellation handler found
                    // nothing to wake (the flag is set before it runs).
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters.append((id, continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = self.state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    private func release() {
        let next = self.state.withLock { state -> CheckedContinuation<Void, any Error>? in
            if state.waiters.isEmpty {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst().continuation
        }
        next?.resume()
    }
}

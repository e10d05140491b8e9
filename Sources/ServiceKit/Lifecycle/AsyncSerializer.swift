import Synchronization

/// Runs async critical sections one at a time, in arrival order (an actor would interleave
/// them at every suspension point). A waiting section does not react to cancellation.
public final class AsyncSerializer: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Runs `body` once every section that arrived before it has ended.
    public func run<T>(_ body: () async throws -> T) async rethrows -> T {
        await self.acquire()
        defer { self.release() }
        return try await body()
    }

    private func acquire() async {
        await withCheckedContinuation { continuation in
            let now = self.state.withLock { state in
                if state.busy {
                    state.waiting.append(continuation)
                    return false
                }
                state.busy = true
                return true
            }
            if now { continuation.resume() }
        }
    }

    private func release() {
        let next = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

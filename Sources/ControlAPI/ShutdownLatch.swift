import ServiceLifecycle
import Synchronization

/// Trips on graceful shutdown, so that long polls answer at once instead of holding the
/// shutdown for their whole wait (a command fetched meanwhile is not acknowledged and is
/// delivered again).
final class ShutdownLatch: Service, Sendable {
    private struct State {
        var tripped = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waits cancelled before they registered.
        var cancelled: Set<Int> = []
    }

    private let state = Mutex(State())

    func run() async throws {
        try? await gracefulShutdown()
        self.trip()
    }

    /// Releases every waiter, now and later.
    func trip() {
        let waiters = self.state.withLock { state in
            state.tripped = true
            defer { state.waiters = [:] }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the latch has tripped, or the task is cancelled.
    func wait() async {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = self.state.withLock { state in
                    if state.tripped || state.cancelled.remove(id) != nil { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = self.state.withLock { state in
                guard let waiter = state.waiters.removeValue(forKey: id) else {
                    state.cancelled.insert(id)
                    return nil as CheckedContinuation<Void, Never>?
                }
                return waiter
            }
            waiter?.resume()
        }
    }
}

import Synchronization

/// Whether an append has ended, and whether its caller gave up on it before it did.
final class AppendFate: Sendable {
    private let state = Mutex((ended: false, abandoned: false))

    /// The append has ended; whether it had been abandoned.
    func end() -> Bool {
        self.state.withLock { state in
            state.ended = true
            return state.abandoned
        }
    }

    /// Its caller gave up on it; whether it was still running (it is then abandoned).
    func abandon() -> Bool {
        self.state.withLock { state in
            state.abandoned = !state.ended
            return state.abandoned
        }
    }
}

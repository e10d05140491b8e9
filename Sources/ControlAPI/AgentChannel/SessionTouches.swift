import Synchronization

/// When each agent session was last recorded as seen: a poll records it at most once a
/// minute (a session idle for `control.agent-session-idle-hours` ends). Bounded: past
/// `capacity` sessions it forgets everything, which costs one write per session.
final class SessionTouches: Sendable {
    private let last = Mutex<[String: ContinuousClock.Instant]>([:])
    let interval: Duration
    let capacity: Int

    init(interval: Duration = .seconds(60), capacity: Int = 100_000) {
        self.interval = interval
        self.capacity = capacity
    }

    /// Whether `session` is due to be recorded now (and, if so, counts it as recorded).
    func due(_ session: String, now: ContinuousClock.Instant = .now) -> Bool {
        self.last.withLock { last in
            if let previous = last[session], now - previous < self.interval { return false }
            if last.count >= self.capacity { last.removeAll(keepingCapacity: true) }
            last[session] = now
            return true
        }
    }
}

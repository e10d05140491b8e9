/// Counts a connection's client messages in windows of 10 seconds, and its invalid ones.
public struct MessageBudget: Sendable {
    public enum Verdict: Sendable, Equatable {
        case accept
        /// More than the allowed messages in the current window.
        case tooMany
    }

    public let perTenSeconds: Int
    private var windowStart: ContinuousClock.Instant
    private var count = 0

    public init(perTenSeconds: Int, now: ContinuousClock.Instant) {
        self.perTenSeconds = perTenSeconds
        self.windowStart = now
    }

    /// Counts one message received at `now`.
    public mutating func admit(at now: ContinuousClock.Instant) -> Verdict {
        if now - self.windowStart > .seconds(10) {
            self.windowStart = now
            self.count = 0
        }
        self.count += 1
        return self.count <= self.perTenSeconds ? .accept : .tooMany
    }
}

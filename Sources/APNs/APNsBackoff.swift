/// Exponential backoff with jitter for retrying a push: attempt 1 waits up to `base`,
/// each later attempt up to twice the one before, never more than `cap`.
public struct APNsBackoff: Sendable, Hashable {
    public var baseMilliseconds: Int64
    public var capMilliseconds: Int64

    public init(baseMilliseconds: Int64 = 1000, capMilliseconds: Int64 = 300_000) {
        self.baseMilliseconds = max(1, baseMilliseconds)
        self.capMilliseconds = max(self.baseMilliseconds, capMilliseconds)
    }

    /// The longest wait before attempt `attempt + 1` (`attempt` ≥ 1 failures so far).
    public func ceiling(afterAttempt attempt: Int) -> Int64 {
        let doublings = min(max(attempt - 1, 0), 40)
        let (scaled, overflow) = self.baseMilliseconds.multipliedReportingOverflow(by: Int64(1) << doublings)
        return overflow ? self.capMilliseconds : min(scaled, self.capMilliseconds)
    }

    /// A wait drawn uniformly from half the ceiling to the ceiling ("equal jitter"), so
    /// retries neither stampede nor fire at once.
    public func delay(afterAttempt attempt: Int, using generator: inout some RandomNumberGenerator) -> Int64 {
        let ceiling = self.ceiling(afterAttempt: attempt)
        return ceiling / 2 + Int64.random(in: 0...(ceiling - ceiling / 2), using: &generator)
    }
}

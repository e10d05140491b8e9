extension Duration {
    /// The duration in seconds, as a Double (for rates).
    public var secondsDouble: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in milliseconds, as a Double (for latencies).
    public var millisecondsDouble: Double { self.secondsDouble * 1000 }

    /// Whole seconds, rounded up, at least 1: a `Retry-After`.
    public var retryAfterSeconds: Int {
        let (seconds, attoseconds) = self.components
        return max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0))
    }

    /// Whole milliseconds, truncated.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = self.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Whole nanoseconds, truncated.
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = self.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

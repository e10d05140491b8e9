extension Duration {
    /// The duration in seconds, as a Double (for rates).
    var secondsDouble: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in milliseconds, as a Double (for latencies).
    var millisecondsDouble: Double { self.secondsDouble * 1000 }
}

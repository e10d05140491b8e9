/// Spike detection on a skill's error rate, one sample per interval: an exponentially
/// weighted mean and variance of the rate, a z-score against them, several consecutive
/// breaches, and a static ceiling beside it (as alerting systems do it).
///
/// - During warm-up (fewer than `warmUp` samples with calls) nothing breaches: a new skill
///   raises no incident until its baseline exists.
/// - A sample breaches when it has at least `minCalls` calls and its rate is at or above the
///   ceiling, or its z-score reaches the sensitivity and it is at least 0.1 above the mean.
/// - The condition holds once `consecutive` samples in a row breach, and clears at the first
///   sample that does not (an interval without calls clears it too: a tool nobody calls is not
///   failing).
/// - Breaching samples do not move the baseline, so a long outage does not become normal.
struct SpikeDetector: Sendable, Equatable {
    struct Parameters: Sendable, Equatable {
        /// The z-score that counts as a spike.
        var sensitivity: Double
        /// The error rate that breaches whatever the baseline.
        var ceiling: Double
        var warmUp: Int = 5
        var consecutive: Int = 2
        var minCalls: Int = 3
        /// The weight of a new sample.
        var alpha: Double = 0.3
        /// The smallest standard deviation used (a flawless skill has none).
        var minDeviation: Double = 0.05
    }

    private(set) var mean = 0.0
    private(set) var variance = 0.0
    private(set) var samples = 0
    private(set) var breaches = 0
    /// Whether the condition holds (`consecutive` breaches in a row).
    private(set) var breaching = false

    /// Takes one interval's sample; answers whether the condition holds.
    @discardableResult
    mutating func observe(calls: Int, errors: Int, _ parameters: Parameters) -> Bool {
        guard calls > 0 else {
            self.breaches = 0
            self.breaching = false
            return false
        }
        let rate = Double(errors) / Double(calls)
        let warm = self.samples >= parameters.warmUp
        var breach = false
        if warm, calls >= parameters.minCalls {
            let deviation = max(self.variance.squareRoot(), parameters.minDeviation)
            let z = (rate - self.mean) / deviation
            breach = rate >= parameters.ceiling || (z >= parameters.sensitivity && rate >= self.mean + 0.1)
        }
        if breach {
            self.breaches += 1
        } else {
            self.breaches = 0
            self.learn(rate, alpha: parameters.alpha)
        }
        self.breaching = self.breaches >= parameters.consecutive
        return self.breaching
    }

    private mutating func learn(_ rate: Double, alpha: Double) {
        if self.samples == 0 {
            self.mean = rate
            self.variance = 0
        } else {
            let difference = rate - self.mean
            let increment = alpha * difference
            self.mean += increment
            self.variance = (1 - alpha) * (self.variance + difference * increment)
        }
        self.samples += 1
    }
}

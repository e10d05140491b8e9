import Foundation

/// Latencies in log-spaced buckets (four per doubling, from 1 ms to about 4.6 hours, longer ones in the last): a quantile
/// comes from the counts, never from a sorted list, and two histograms add up. A quantile is
/// the geometric middle of its bucket, so it is within about 9 % of the true value. Empty until
/// the first sample (an idle interval costs no buckets).
struct LatencyHistogram: Sendable, Equatable {
    static let bucketsPerDoubling = 4.0
    static let bucketCount = 96
    private(set) var counts: [UInt32] = []
    private(set) var total: UInt64 = 0

    static func bucket(_ milliseconds: Double) -> Int {
        guard milliseconds > 1 else { return 0 }
        let index = Int((Self.bucketsPerDoubling * log2(milliseconds)).rounded(.down)) + 1
        return min(index, Self.bucketCount - 1)
    }

    /// The geometric middle of a bucket, in milliseconds.
    static func value(ofBucket index: Int) -> Double {
        guard index > 0 else { return 1 }
        return exp2((Double(index - 1) + 0.5) / Self.bucketsPerDoubling)
    }

    mutating func record(_ milliseconds: Double) {
        guard milliseconds.isFinite, milliseconds >= 0 else { return }
        if self.counts.isEmpty { self.counts = Array(repeating: 0, count: Self.bucketCount) }
        let index = Self.bucket(milliseconds)
        if self.counts[index] < UInt32.max { self.counts[index] += 1 }
        self.total += 1
    }

    mutating func add(_ other: LatencyHistogram) {
        guard !other.counts.isEmpty else { return }
        if self.counts.isEmpty { self.counts = Array(repeating: 0, count: Self.bucketCount) }
        for index in 0..<Self.bucketCount {
            let (sum, overflow) = self.counts[index].addingReportingOverflow(other.counts[index])
            self.counts[index] = overflow ? .max : sum
        }
        self.total += other.total
    }

    /// The `q` quantile (0…1); nil when empty.
    func quantile(_ q: Double) -> Double? {
        guard self.total > 0 else { return nil }
        let rank = max(1, UInt64((Double(self.total) * q).rounded(.up)))
        var seen: UInt64 = 0
        for (index, count) in self.counts.enumerated() {
            seen += UInt64(count)
            if seen >= rank { return Self.value(ofBucket: index) }
        }
        return Self.value(ofBucket: Self.bucketCount - 1)
    }
}

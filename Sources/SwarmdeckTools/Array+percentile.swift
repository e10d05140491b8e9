extension Array where Element: Comparable {
    /// The value at quantile `p` (0…1) of an ascending array, by nearest rank; nil when empty.
    /// What every benchmark reports its p50/p99 with.
    public func atQuantile(_ p: Double) -> Element? {
        self.isEmpty ? nil : self[Swift.min(self.count - 1, Int(Double(self.count) * p))]
    }
}

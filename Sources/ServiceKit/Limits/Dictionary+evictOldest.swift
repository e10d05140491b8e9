extension Dictionary {
    /// Makes room for one more entry under `bound`: when the dictionary holds `bound` entries or
    /// more, removes the one whose `age` is least. Answers whether it removed one.
    @discardableResult
    public mutating func evictOldest<Age: Comparable>(bound: Int, by age: (Value) -> Age) -> Bool {
        guard self.count >= bound, let oldest = self.min(by: { age($0.value) < age($1.value) })?.key else { return false }
        self[oldest] = nil
        return true
    }
}

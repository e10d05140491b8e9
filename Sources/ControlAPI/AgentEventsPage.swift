/// Which of an agent's newest events one answer carries: the newest that fit in `maxBytes` (at
/// least one), and where the page before starts. Apart from I/O so its bounds are unit-tested.
struct AgentEventsPage {
    /// How many of the events, counted from the newest.
    var count: Int
    /// The `before` of the page before; nil when nothing older can exist.
    var nextBefore: Int64?

    /// - Parameters:
    ///   - events: the seqs and frame sizes read, oldest first (at most `limit`).
    ///   - limit: how many were asked for.
    init(_ events: [(seq: Int64, bytes: Int)], limit: Int, maxBytes: Int) {
        var count = 0
        var bytes = 0
        for event in events.reversed() {
            guard count == 0 || bytes + event.bytes <= maxBytes else { break }
            bytes += event.bytes
            count += 1
        }
        self.count = count
        // Older events may exist when the read was full or the bytes cut it short.
        let cut = count < events.count || events.count == limit
        self.nextBefore = cut && count > 0 ? events[events.count - count].seq : nil
    }
}

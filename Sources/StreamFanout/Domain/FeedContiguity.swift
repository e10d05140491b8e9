/// The live feed's contiguity decisions, apart from its I/O (``TenantFeed`` acts on them):
/// what to do with an event from NATS given the head delivered so far, what the tail check
/// back-fills, and how a back-fill pages through the log and ends (delivered, or a gap).
enum FeedContiguity {
    /// What to do with the event at `seq` when `head` (nil before any) was delivered last.
    enum Step: Equatable {
        /// A late or repeated copy of an event already delivered (or back-filled).
        case drop
        /// The next event: deliver it.
        case deliver
        /// Events were lost or overtaken: read `from...to` from the log first, then deliver it.
        case backfillThenDeliver(from: Int64, to: Int64)
    }

    static func step(head: Int64?, seq: Int64) -> Step {
        let expected = (head ?? 0) + 1
        if seq < expected { return .drop }
        if seq > expected { return .backfillThenDeliver(from: expected, to: seq - 1) }
        return .deliver
    }

    /// What the tail check back-fills when the log's head is `logHead`: nothing unless the log
    /// is ahead of the feed (a publish lost after the last commit has no later event to reveal it).
    static func catchUp(head: Int64?, logHead: Int64) -> ClosedRange<Int64>? {
        let head = head ?? 0
        return logHead > head ? (head + 1)...logHead : nil
    }

    /// A back-fill of `from...to`, page by page.
    struct Backfill: Equatable {
        /// The last seq delivered.
        private(set) var after: Int64
        let to: Int64
        /// The log answered an empty page: what is left is not there.
        private(set) var exhausted = false

        init(from: Int64, to: Int64) {
            self.after = from - 1
            self.to = to
        }

        /// Whether another page should be read.
        var wantsMore: Bool { !self.exhausted && self.after < self.to }

        /// Takes a page of seqs (ascending, at most through ``to``): the indices of the ones to
        /// deliver, in order (a seq at or below ``after`` is skipped).
        mutating func take(_ seqs: [Int64]) -> [Int] {
            if seqs.isEmpty {
                self.exhausted = true
                return []
            }
            var deliver: [Int] = []
            for (index, seq) in seqs.enumerated() where seq > self.after && seq <= self.to {
                deliver.append(index)
                self.after = seq
            }
            // A page that moves nothing forward would be read again forever.
            if deliver.isEmpty { self.exhausted = true }
            return deliver
        }

        /// What could not be delivered once the back-fill stops (the log lacks it or failed):
        /// the listeners are told of it and the feed moves on past it.
        var gap: ClosedRange<Int64>? { self.after < self.to ? (self.after + 1)...self.to : nil }
    }
}

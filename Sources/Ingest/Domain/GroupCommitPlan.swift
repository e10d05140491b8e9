import EventLog

/// One transaction's events from several submissions: the first occurrence of a `msgId` in the
/// transaction goes to the log, later ones answer as its duplicates (a rejected first
/// occurrence rejects them too).
struct GroupCommitPlan<Event> {
    /// The events to append, first occurrences only, in submission order.
    private(set) var unique: [Event] = []
    /// Per submission, per event: its index in ``unique``, or `-1 - index` of the first
    /// occurrence it repeats.
    private var positions: [[Int]] = []

    init(_ submissions: [[Event]], msgID: (Event) -> String) {
        var first: [String: Int] = [:]
        for events in submissions {
            var mine: [Int] = []
            mine.reserveCapacity(events.count)
            for event in events {
                let id = msgID(event)
                if let index = first[id] {
                    mine.append(-1 - index)
                } else {
                    first[id] = self.unique.count
                    mine.append(self.unique.count)
                    self.unique.append(event)
                }
            }
            self.positions.append(mine)
        }
    }

    /// Each submission's outcomes, given the log's outcome for each of ``unique``.
    func outcomes(_ appended: [ItemOutcome]) -> [[ItemOutcome]] {
        self.positions.map { mine in
            mine.map { position in
                if position >= 0 { return appended[position] }
                switch appended[-1 - position] {
                case .accepted(let seq), .duplicate(let seq): return .duplicate(seq: seq)
                case .rejected(let reason): return .rejected(reason: reason)
                }
            }
        }
    }
}

extension GroupCommitPlan: Sendable where Event: Sendable {}

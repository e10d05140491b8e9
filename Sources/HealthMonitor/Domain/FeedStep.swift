/// One step of applying a run of one tenant's live events: apply some of them, or first read a
/// gap from the log. Pure: ``HealthFeed`` carries the steps out.
enum FeedStep: Equatable, Sendable {
    /// Apply the run's events at these positions (0-based, in seq order).
    case apply([Int])
    /// Read and apply the log's events `after < seq <= through` (a message the subscription
    /// dropped, another ingest replica's publish still on its way, a tenant new since the start).
    case fill(after: Int64, through: Int64)

    /// The steps for a run whose events have `seqs`, in the order they came, once `applied` is
    /// the tenant's last applied seq. An event at or below what comes before it is skipped; the
    /// events before a gap are applied before the gap is read, so each is applied in seq order.
    /// A gap is read for its newest `maxFill` events at most (the older ones are skipped, as
    /// the rebuild skips them; with 0, none is read).
    static func plan(seqs: [Int64], applied: Int64, maxFill: Int) -> [FeedStep] {
        var steps: [FeedStep] = []
        var pending: [Int] = []
        var expected = applied + 1
        for (position, seq) in seqs.enumerated() where seq >= expected {
            if seq > expected {
                if !pending.isEmpty { steps.append(.apply(pending)) }
                pending.removeAll()
                let after = max(expected - 1, seq - 1 - Int64(maxFill))
                if after < seq - 1 { steps.append(.fill(after: after, through: seq - 1)) }
            }
            pending.append(position)
            expected = seq + 1
        }
        if !pending.isEmpty { steps.append(.apply(pending)) }
        return steps
    }
}

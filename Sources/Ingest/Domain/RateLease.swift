/// One tenant's share of a rate that every replica draws on, as one replica holds it: tokens
/// taken from the shared bucket a chunk at a time, spent by the events it admits. A request is
/// admitted whole while the lease holds a token, and then charged its events, which may leave the
/// lease in debt; the debt is paid from the shared bucket before the next admission, so a tenant
/// gets the bucket's rate across the replicas, not a rate per replica. Pure: ``TenantEventRate``
/// takes the tokens from Postgres.
struct RateLease: Sendable, Hashable {
    /// What the next request of the tenant meets.
    enum Step: Sendable, Hashable {
        case admit
        /// Refused until the shared bucket can pay the debt back (the wait).
        case refuse(Duration)
        /// Take up to `wanted` tokens from the shared bucket, then look again.
        case refill(wanted: Double)
    }

    /// Tokens held (below zero: events admitted and not yet paid for).
    var held: Double = 0
    /// Until when a request is refused without asking the shared bucket again.
    var refusedUntil: ContinuousClock.Instant?

    /// What a request meets at `now`; `chunk` is what a refill takes beyond the debt.
    func step(now: ContinuousClock.Instant, chunk: Double) -> Step {
        if self.held > 0 { return .admit }
        if let until = self.refusedUntil, now < until { return .refuse(until - now) }
        return .refill(wanted: chunk - self.held)
    }

    /// Records what a refill took from the shared bucket: past the debt, the lease admits again;
    /// short of it, requests are refused until the bucket's refill at `perSecond` can cover it
    /// (or, when the bucket gave nothing, its own `wait` if that is later).
    mutating func refilled(_ granted: Double, wait: Duration?, now: ContinuousClock.Instant, perSecond: Double) {
        self.held += granted
        if self.held > 0 {
            self.refusedUntil = nil
        } else {
            let covering = Duration.seconds((1 - self.held) / max(perSecond, 1e-9))
            self.refusedUntil = now + max(covering, wait ?? .zero)
        }
    }

    /// Charges `events` admitted.
    mutating func spend(_ events: Int) {
        self.held -= Double(events)
    }
}

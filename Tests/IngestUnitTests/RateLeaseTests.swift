import Testing

@testable import Ingest

@Suite("A replica's lease on a tenant's shared rate: admit while it holds a token, pay the debt back first (unit)")
struct RateLeaseTests {
    let now = ContinuousClock.now

    @Test(
        "empty, it asks the shared bucket for a chunk; holding a token, it admits; a request larger than what it holds is admitted whole and leaves a debt"
    )
    func admitAndDebt() {
        var lease = RateLease()
        #expect(lease.step(now: self.now, chunk: 10) == .refill(wanted: 10))
        lease.refilled(10, wait: nil, now: self.now, perSecond: 100)
        #expect(lease.step(now: self.now, chunk: 10) == .admit)
        lease.spend(1500)
        #expect(lease.held == -1490)
        // The next refill asks for the debt and a chunk.
        #expect(lease.step(now: self.now, chunk: 10) == .refill(wanted: 1500))
    }

    @Test("a refill short of the debt refuses until the bucket's rate can cover it, or the bucket's own wait if later; past the debt it admits again")
    func refusedUntilPaid() {
        var lease = RateLease(held: -1000)
        lease.refilled(490, wait: nil, now: self.now, perSecond: 100)
        // 510 owed, one more token to hold: 5.11 s at 100 a second.
        #expect(Self.refusal(lease.step(now: self.now, chunk: 10)).map { abs($0 - 5.11) < 1e-6 } == true)
        #expect(Self.refusal(lease.step(now: self.now + .seconds(5), chunk: 10)).map { abs($0 - 0.11) < 1e-6 } == true)
        #expect(lease.step(now: self.now + .seconds(6), chunk: 10) == .refill(wanted: 520))
        lease.refilled(0, wait: .seconds(30), now: self.now, perSecond: 100)
        #expect(Self.refusal(lease.step(now: self.now, chunk: 10)).map { abs($0 - 30) < 1e-6 } == true)
        lease.refilled(520, wait: nil, now: self.now, perSecond: 100)
        #expect(lease.held == 10 && lease.refusedUntil == nil)
        #expect(lease.step(now: self.now, chunk: 10) == .admit)
    }

    @Test(
        "over a run of requests, a lease never admits more than it took from the shared bucket plus one request's overshoot",
        arguments: [1, 7, 64]
    )
    func boundedByGrants(_ size: Int) {
        var lease = RateLease()
        var bucket = 100.0
        var granted = 0.0
        var admitted = 0
        for _ in 0..<500 {
            switch lease.step(now: self.now, chunk: 5) {
            case .admit:
                lease.spend(size)
                admitted += size
            case .refill(let wanted):
                let take = bucket >= 1 ? min(bucket, wanted) : 0
                bucket -= take
                granted += take
                lease.refilled(take, wait: take == 0 ? .seconds(1) : nil, now: self.now, perSecond: 1)
            case .refuse:
                break
            }
        }
        #expect(Double(admitted) <= granted + Double(size))
        #expect(bucket < 1)
    }

    /// The seconds a refusal asks to wait; nil for another step.
    static func refusal(_ step: RateLease.Step) -> Double? {
        guard case .refuse(let wait) = step else { return nil }
        return Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
    }
}

import Testing

@testable import HealthMonitor

@Suite("Health's live feed: which events to apply, which gaps to read from the log (pure)")
struct FeedStepTests {
    @Test("a run that follows what was applied is applied whole, in one step")
    func contiguous() {
        #expect(FeedStep.plan(seqs: [11, 12, 13], applied: 10, maxFill: 1000) == [.apply([0, 1, 2])])
    }

    @Test("a gap before the run is read first")
    func gapBefore() {
        #expect(FeedStep.plan(seqs: [15, 16], applied: 10, maxFill: 1000) == [.fill(after: 10, through: 14), .apply([0, 1])])
    }

    @Test("a gap in the middle of a run: what comes before it is applied, then the gap read, then the rest")
    func gapInside() {
        #expect(
            FeedStep.plan(seqs: [11, 12, 20, 21, 25], applied: 10, maxFill: 1000) == [
                .apply([0, 1]), .fill(after: 12, through: 19), .apply([2, 3]), .fill(after: 21, through: 24), .apply([4]),
            ]
        )
    }

    @Test("events at or below what was applied, or below one before them, are skipped")
    func skipped() {
        #expect(FeedStep.plan(seqs: [9, 10, 11, 11, 10, 12], applied: 10, maxFill: 1000) == [.apply([2, 5])])
        #expect(FeedStep.plan(seqs: [5, 6], applied: 10, maxFill: 1000) == [])
        #expect(FeedStep.plan(seqs: [], applied: 10, maxFill: 1000) == [])
    }

    @Test("a gap longer than maxFill is read for its newest maxFill events only; with 0, none is read")
    func boundedFill() {
        #expect(FeedStep.plan(seqs: [5_001], applied: 0, maxFill: 100) == [.fill(after: 4_900, through: 5_000), .apply([0])])
        #expect(FeedStep.plan(seqs: [50], applied: 10, maxFill: 0) == [.apply([0])])
    }

    @Test("a new tenant (nothing applied) has its log read from the start up to the first live event")
    func newTenant() {
        #expect(FeedStep.plan(seqs: [3, 4], applied: 0, maxFill: 1000) == [.fill(after: 0, through: 2), .apply([0, 1])])
        #expect(FeedStep.plan(seqs: [1, 2], applied: 0, maxFill: 1000) == [.apply([0, 1])])
    }
}

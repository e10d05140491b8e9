import Testing

@testable import StreamFanout

/// The live feed's gap and catch-up decisions, without NATS or Postgres.
@Suite struct FeedContiguityTests {
    @Test func theNextSeqIsDeliveredOlderOnesDroppedAndAJumpBackFillsFirst() {
        #expect(FeedContiguity.step(head: nil, seq: 1) == .deliver)
        #expect(FeedContiguity.step(head: 0, seq: 1) == .deliver)
        #expect(FeedContiguity.step(head: 7, seq: 8) == .deliver)
        #expect(FeedContiguity.step(head: 7, seq: 7) == .drop)
        #expect(FeedContiguity.step(head: 7, seq: 3) == .drop)
        #expect(FeedContiguity.step(head: 7, seq: 9) == .backfillThenDeliver(from: 8, to: 8))
        #expect(FeedContiguity.step(head: nil, seq: 5) == .backfillThenDeliver(from: 1, to: 4))
    }

    @Test func theTailCheckBackFillsOnlyWhenTheLogIsAhead() {
        #expect(FeedContiguity.catchUp(head: 10, logHead: 10) == nil)
        #expect(FeedContiguity.catchUp(head: 10, logHead: 9) == nil)
        #expect(FeedContiguity.catchUp(head: 10, logHead: 13) == 11...13)
        #expect(FeedContiguity.catchUp(head: nil, logHead: 2) == 1...2)
    }

    @Test func aBackFillPagesUntilItReachesItsEnd() {
        var backfill = FeedContiguity.Backfill(from: 5, to: 9)
        #expect(backfill.wantsMore && backfill.after == 4)
        #expect(backfill.take([5, 6]) == [0, 1])
        #expect(backfill.wantsMore && backfill.after == 6)
        // A repeat of a delivered seq is skipped; a seq past the end is not taken.
        #expect(backfill.take([6, 7, 8, 9, 10]) == [1, 2, 3])
        #expect(!backfill.wantsMore && backfill.gap == nil)
    }

    @Test func whatTheLogLacksBecomesAGapAfterTheEventsItHas() {
        var backfill = FeedContiguity.Backfill(from: 5, to: 9)
        #expect(backfill.take([5, 7]) == [0, 1])  // 6 is missing in the middle: the log is seq-ordered, so it is gone
        #expect(backfill.wantsMore)
        #expect(backfill.take([]).isEmpty)
        #expect(!backfill.wantsMore)
        #expect(backfill.gap == 8...9)
    }

    @Test func aFailedBackFillReportsEverythingNotYetDelivered() {
        var backfill = FeedContiguity.Backfill(from: 20, to: 29)
        #expect(backfill.take([20, 21, 22]).count == 3)
        // The reader throws here; the feed reports what is left.
        #expect(backfill.gap == 23...29)
    }

    @Test func aPageThatMovesNothingForwardEndsTheBackFill() {
        var backfill = FeedContiguity.Backfill(from: 5, to: 9)
        #expect(backfill.take([5, 6]) == [0, 1])
        // Only seqs already delivered (or past the end): read again, it would loop forever.
        #expect(backfill.take([5, 6]).isEmpty)
        #expect(!backfill.wantsMore)
        #expect(backfill.gap == 7...9)
    }
}

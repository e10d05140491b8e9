import EventLog
import TestSupport
import Testing

@testable import Ingest

/// Group commit's bookkeeping and de-duplication, without Postgres.
@Suite struct GroupCommitTests {
    typealias Queue = CommitQueue<String>

    @Test func theFirstSubmissionStartsTheTenantsWriterAndLaterOnesQueueBehindIt() {
        var queue = Queue(maxEvents: 100, maxBytes: 10_000, batchEvents: 10)
        #expect(queue.admit("a1", tenant: "a", events: 3, bytes: 30) == .startWriter)
        #expect(queue.admit("a2", tenant: "a", events: 3, bytes: 30) == .queued)
        #expect(queue.admit("b1", tenant: "b", events: 1, bytes: 10) == .startWriter)
        #expect(queue.events == 7 && queue.bytes == 70)
    }

    @Test func overEitherBoundNothingIsQueued() {
        var queue = Queue(maxEvents: 10, maxBytes: 100, batchEvents: 10)
        #expect(queue.admit("a1", tenant: "a", events: 8, bytes: 10) == .startWriter)
        #expect(queue.admit("a2", tenant: "a", events: 3, bytes: 10) == .refused)
        #expect(queue.admit("b1", tenant: "b", events: 1, bytes: 95) == .refused)
        #expect(queue.events == 8 && queue.bytes == 10)
        #expect(queue.queues["b"] == nil && !queue.writing.contains("b"))
        // Exactly at the bound is allowed.
        #expect(queue.admit("b2", tenant: "b", events: 2, bytes: 90) == .startWriter)
    }

    @Test func aBatchTakesWholeSubmissionsInOrderUpToTheBatchSizeAndAtLeastOne() {
        var queue = Queue(maxEvents: 1000, maxBytes: 100_000, batchEvents: 10)
        for (name, events) in [("s1", 4), ("s2", 5), ("s3", 2), ("s4", 30), ("s5", 1)] {
            _ = queue.admit(name, tenant: "t", events: events, bytes: events)
        }
        #expect(queue.nextBatch(tenant: "t").map(\.item) == ["s1", "s2"])  // 9; s3 would make 11
        #expect(queue.nextBatch(tenant: "t").map(\.item) == ["s3"])  // s4 alone is over the size
        #expect(queue.nextBatch(tenant: "t").map(\.item) == ["s4"])  // an oversize one goes alone
        #expect(queue.nextBatch(tenant: "t").map(\.item) == ["s5"])
    }

    @Test func aBatchIsTakenAheadOnlyWhenItIsFull() {
        var queue = Queue(maxEvents: 1000, maxBytes: 100_000, batchEvents: 10)
        #expect(queue.fullBatch(tenant: "t") == nil)  // nothing waits
        _ = queue.admit("s1", tenant: "t", events: 4, bytes: 4)
        _ = queue.admit("s2", tenant: "t", events: 5, bytes: 5)
        #expect(queue.fullBatch(tenant: "t") == nil)  // 9: one more event could still join
        _ = queue.admit("s3", tenant: "t", events: 2, bytes: 2)
        #expect(queue.fullBatch(tenant: "t")?.map(\.item) == ["s1", "s2"])  // s3 cannot join
        #expect(queue.fullBatch(tenant: "t") == nil)  // s3 alone could still grow
        _ = queue.admit("s4", tenant: "t", events: 8, bytes: 8)
        #expect(queue.fullBatch(tenant: "t")?.map(\.item) == ["s3", "s4"])  // exactly 10
        _ = queue.admit("s5", tenant: "t", events: 30, bytes: 30)
        #expect(queue.fullBatch(tenant: "t")?.map(\.item) == ["s5"])  // an oversize one is full alone
        #expect(queue.fullBatch(tenant: "t") == nil)
        // Taking ahead never ends the writer: the next submission queues behind it.
        #expect(queue.writing.contains("t"))
        #expect(queue.admit("s6", tenant: "t", events: 1, bytes: 1) == .queued)
    }

    /// Whatever arrives after a batch is taken ahead, ``CommitQueue/nextBatch(tenant:)`` would
    /// have taken the same submissions then.
    @Test(arguments: 0..<200) func aBatchTakenAheadIsTheOneTakenLater(seed: UInt64) {
        var random = SplitMix64(state: seed)
        var ahead = Queue(maxEvents: 1_000_000, maxBytes: 100_000_000, batchEvents: 10)
        var later = ahead
        var name = 0
        func arrive(_ count: Int, random: inout SplitMix64) {
            for _ in 0..<count {
                name += 1
                let events = Int.random(in: 1...14, using: &random)
                _ = ahead.admit("s\(name)", tenant: "t", events: events, bytes: events)
                _ = later.admit("s\(name)", tenant: "t", events: events, bytes: events)
            }
        }
        for _ in 0..<20 {
            arrive(Int.random(in: 0...4, using: &random), random: &random)
            if let taken = ahead.fullBatch(tenant: "t") {
                arrive(Int.random(in: 0...4, using: &random), random: &random)
                #expect(taken.map(\.item) == later.nextBatch(tenant: "t").map(\.item))
            } else {
                #expect(ahead.nextBatch(tenant: "t").map(\.item) == later.nextBatch(tenant: "t").map(\.item))
            }
        }
    }

    @Test func anEmptyQueueEndsTheWriterAndTheNextSubmissionStartsAnother() {
        var queue = Queue(maxEvents: 100, maxBytes: 1000, batchEvents: 10)
        _ = queue.admit("a1", tenant: "a", events: 2, bytes: 20)
        let batch = queue.nextBatch(tenant: "a")
        #expect(queue.admit("a2", tenant: "a", events: 1, bytes: 10) == .queued)  // the writer still runs
        #expect(queue.nextBatch(tenant: "a").map(\.item) == ["a2"])
        #expect(queue.nextBatch(tenant: "a").isEmpty)
        #expect(!queue.writing.contains("a") && queue.queues["a"] == nil)
        #expect(queue.admit("a3", tenant: "a", events: 1, bytes: 10) == .startWriter)
        // Weight counts until the transaction ends, committed or not.
        #expect(queue.events == 4)
        queue.finished(batch, tenant: "a")
        #expect(queue.events == 2 && queue.bytes == 20)
    }

    @Test func oneTenantHoldsAtMostItsShareAndTheOthersStillGetIn() {
        var queue = Queue(maxEvents: 100, maxBytes: 1000, tenantShare: 0.5, batchEvents: 10)
        #expect(queue.admit("f1", tenant: "flood", events: 30, bytes: 10) == .startWriter)
        #expect(queue.admit("f2", tenant: "flood", events: 20, bytes: 10) == .queued)  // 50: its share
        #expect(queue.admit("f3", tenant: "flood", events: 1, bytes: 1) == .refused)
        #expect(queue.admit("q1", tenant: "quiet", events: 10, bytes: 10) == .startWriter)
        // Bytes are shared the same way.
        #expect(queue.admit("q2", tenant: "quiet", events: 1, bytes: 491) == .refused)
        #expect(queue.admit("q3", tenant: "quiet", events: 1, bytes: 490) == .queued)
        // What the flooding tenant's transaction releases is its own again.
        let batch = queue.nextBatch(tenant: "flood")
        queue.finished(batch, tenant: "flood")
        #expect(queue.tenantLoad["flood"]?.events == 20)
        #expect(queue.admit("f4", tenant: "flood", events: 30, bytes: 10) == .queued)
        queue.finished(queue.nextBatch(tenant: "flood"), tenant: "flood")
        queue.finished(queue.nextBatch(tenant: "flood"), tenant: "flood")
        #expect(queue.tenantLoad["flood"] == nil)
    }

    @Test func repeatsOfAMsgIdInOneTransactionAnswerAsDuplicatesOfTheFirst() {
        let plan = GroupCommitPlan([["m1", "m2", "m1"], ["m2", "m3"], ["m4"]], msgID: { $0 })
        #expect(plan.unique == ["m1", "m2", "m3", "m4"])
        let outcomes = plan.outcomes([.accepted(seq: 10), .duplicate(seq: 4), .rejected(reason: "too big"), .accepted(seq: 11)])
        #expect(
            outcomes == [
                [.accepted(seq: 10), .duplicate(seq: 4), .duplicate(seq: 10)],
                [.duplicate(seq: 4), .rejected(reason: "too big")],
                [.accepted(seq: 11)],
            ]
        )
    }

    @Test func aRejectedFirstOccurrenceRejectsItsRepeats() {
        let plan = GroupCommitPlan([["x"], ["x", "x"]], msgID: { $0 })
        #expect(plan.unique == ["x"])
        #expect(plan.outcomes([.rejected(reason: "bad")]) == [[.rejected(reason: "bad")], [.rejected(reason: "bad"), .rejected(reason: "bad")]])
    }

    @Test func anAppendThatEndsBeforeItsCallerGivesUpIsNotAbandoned() {
        let fate = AppendFate()
        #expect(!fate.end())
        #expect(!fate.abandon())
    }

    @Test func anAppendGivenUpOnWhileRunningIsAbandonedUntilItEnds() {
        let fate = AppendFate()
        #expect(fate.abandon())
        #expect(fate.end())
    }
}

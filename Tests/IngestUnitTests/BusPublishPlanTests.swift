import Contracts
import Foundation
import TestSupport
import Testing

@testable import EventLog
@testable import Ingest

@Suite("Bus publish plan")
struct BusPublishPlanTests {
    typealias Part = BusPublishPlan.Part

    @Test("a run of events is one batch; an ACP message goes alone, between the batches around it")
    func runsAndACP() {
        let plan = BusPublishPlan(sizes: [10, 10, 10, 10, 10], isACP: [false, false, true, false, false], budget: 1000, batches: true)
        #expect(plan.parts == [.batch(0..<2), .single(2), .batch(3..<5)])
        let acpOnly = BusPublishPlan(sizes: [10, 10], isACP: [true, true], budget: 1000, batches: true)
        #expect(acpOnly.parts == [.single(0), .single(1)])
    }

    @Test("batches stay within the budget, counting what a batch adds per envelope; a larger event goes alone")
    func budget() {
        let overhead = BusPublishPlan.perEnvelopeOverhead
        let size = 100 - overhead
        // 299: three events would fit without the overhead, two fit with it.
        let plan = BusPublishPlan(sizes: [size, size, size, size, size], isACP: Array(repeating: false, count: 5), budget: 299, batches: true)
        #expect(plan.parts == [.batch(0..<2), .batch(2..<4), .batch(4..<5)])
        let large = BusPublishPlan(sizes: [size, 500, size], isACP: [false, false, false], budget: 200, batches: true)
        #expect(large.parts == [.batch(0..<1), .single(1), .batch(2..<3)])
    }

    @Test("without batches, every event alone; nothing for no events")
    func withoutBatches() {
        let plan = BusPublishPlan(sizes: [10, 10, 10], isACP: [false, true, false], budget: 1000, batches: false)
        #expect(plan.parts == [.single(0), .single(1), .single(2)])
        #expect(BusPublishPlan(sizes: [], isACP: [], budget: 1000, batches: true).parts.isEmpty)
    }

    @Test("every event is in exactly one part, in order, over random shapes", arguments: 0..<20)
    func coversInOrder(seed: UInt64) {
        var random = SplitMix64(state: seed)
        let count = Int.random(in: 0...300, using: &random)
        let sizes = (0..<count).map { _ in Int.random(in: 1...3000, using: &random) }
        let isACP = (0..<count).map { _ in Int.random(in: 0..<10, using: &random) == 0 }
        let budget = Int.random(in: 500...20_000, using: &random)
        let plan = BusPublishPlan(sizes: sizes, isACP: isACP, budget: budget, batches: true)
        var covered: [Int] = []
        for part in plan.parts {
            switch part {
            case .batch(let range):
                #expect(!range.isEmpty)
                #expect(range.allSatisfy { !isACP[$0] })
                #expect(range.map { sizes[$0] + BusPublishPlan.perEnvelopeOverhead }.reduce(0, +) <= budget)
                covered += range
            case .single(let index):
                #expect(isACP[index] || sizes[index] + BusPublishPlan.perEnvelopeOverhead > budget)
                covered.append(index)
            }
        }
        #expect(covered == Array(0..<count))
    }
}

@Suite("Envelope size bound")
struct EnvelopeSizeBoundTests {
    @Test("the bound is never below the encoded envelope, with every number at its longest and multibyte strings", arguments: 0..<50)
    func neverBelow(seed: UInt64) throws {
        var random = SplitMix64(state: seed)
        func text() -> String {
            String((0..<Int.random(in: 0...40, using: &random)).map { _ in ["a", "ü", "漢", "😀", "~"].randomElement(using: &random)! })
        }
        let extremes: [Int64] = [0, 1, -1, .max, .min, Int64.random(in: .min ... .max, using: &random)]
        let event = PreparedEvent(
            msgID: text(),
            swarmID: text(),
            agentID: text(),
            kind: [.log, .UNRECOGNIZED(-1), .UNRECOGNIZED(Int(Int32.max))].randomElement(using: &random)!,
            severity: [.error, .UNRECOGNIZED(-1)].randomElement(using: &random)!,
            occurredAtMilliseconds: extremes.randomElement(using: &random)! / 1_000_000,
            requestID: text(),
            frameTail: Array(text().utf8)
        )
        let committed = CommittedEvent(
            seq: extremes.randomElement(using: &random)!,
            threadSeq: extremes.randomElement(using: &random)!,
            event: event
        )
        let tenant = text()
        var envelope = BusEventEnvelope()
        envelope.tenantID = tenant
        envelope.seq = committed.seq
        envelope.msgID = event.msgID
        envelope.swarmID = event.swarmID
        envelope.agentID = event.agentID
        envelope.kind = event.kind
        envelope.severity = event.severity
        envelope.occurredUnixNano = event.occurredAtMilliseconds * 1_000_000
        envelope.committedUnixNano = extremes.randomElement(using: &random)!
        envelope.frame = Data(committed.frame)
        envelope.requestID = event.requestID
        // An ACP message's thread (the event above has none; its fields are counted the same way).
        envelope.threadID = text()
        envelope.threadSeq = committed.threadSeq
        let encoded: [UInt8] = try envelope.serializedBytes()
        #expect(EventPublisher.envelopeSizeBound(of: committed, tenant: tenant) + envelope.threadID.utf8.count >= encoded.count)
    }
}

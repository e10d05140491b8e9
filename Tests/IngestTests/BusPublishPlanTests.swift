import Testing

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
        let plan = BusPublishPlan(sizes: [size, size, size, size, size], isACP: Array(repeating: false, count: 5), budget: 200, batches: true)
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
    func coversInOrder(seed: Int) {
        var random = SystemRandomNumberGenerator()
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

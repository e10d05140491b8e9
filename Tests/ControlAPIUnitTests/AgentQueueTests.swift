import TestSupport
import Testing

@testable import ControlAPI

@Suite("An agent's command queue as a cursor: what the walk does, how the floor moves (unit)")
struct AgentQueueTests {
    typealias Delivery = AgentQueue.Delivery
    let inFlight = Delivery(done: false, dueIn: .seconds(20))
    let due = Delivery(done: false, dueIn: .seconds(-1))
    let done = Delivery(done: true, dueIn: .seconds(20))

    @Test("a new command is delivered; one done or in flight is skipped; one due again is delivered again; one at or below the floor is skipped")
    func steps() {
        let queue = AgentQueue(floor: 4, deliveries: [5: self.done, 6: self.inFlight, 7: self.due])
        #expect(queue.step(at: 3, maxInFlight: 64) == .skip)
        #expect(queue.step(at: 4, maxInFlight: 64) == .skip)
        #expect(queue.step(at: 5, maxInFlight: 64) == .skip)
        #expect(queue.step(at: 6, maxInFlight: 64) == .skip)
        #expect(queue.step(at: 7, maxInFlight: 64) == .deliver)
        #expect(queue.step(at: 8, maxInFlight: 64) == .deliver)
        #expect(queue.inFlight == 1)
        #expect(queue.nextDue == .seconds(20))
    }

    @Test("with maxInFlight commands in flight, a new one waits; one due again is still delivered")
    func full() {
        let queue = AgentQueue(floor: 0, deliveries: [1: self.inFlight, 2: self.inFlight, 3: self.due])
        #expect(queue.step(at: 4, maxInFlight: 2) == .full)
        #expect(queue.step(at: 3, maxInFlight: 2) == .deliver)
        #expect(queue.step(at: 4, maxInFlight: 3) == .deliver)
    }

    @Test("the floor moves up over the done deliveries at the bottom, never past one in flight, never down")
    func floor() {
        var queue = AgentQueue(floor: 10, deliveries: [11: self.inFlight, 12: self.inFlight, 14: self.inFlight])
        #expect(queue.complete([12]) == 10)
        #expect(queue.deliveries.keys.sorted() == [11, 12, 14])
        #expect(queue.complete([11]) == 12)
        #expect(queue.deliveries.keys.sorted() == [14])
        // An unknown sequence changes nothing (no delivery of it: never delivered, or below the floor).
        #expect(queue.complete([13, 9]) == 12)
        #expect(queue.complete([14]) == 14)
        #expect(queue.deliveries.isEmpty)
        #expect(queue.inFlight == 0 && queue.nextDue == nil)
    }

    @Test("a stretch the walk read past names the deliveries gone from the stream: not done ones only, inside it only")
    func gone() {
        let queue = AgentQueue(floor: 0, deliveries: [2: self.inFlight, 3: self.done, 5: self.due, 9: self.inFlight])
        #expect(queue.gone(in: 1..<9) == [2, 5])
        #expect(queue.gone(in: 6..<9) == [])
        #expect(queue.gone(in: 6..<UInt64.max) == [9])
        var after = queue
        #expect(after.complete(queue.gone(in: 1..<9)) == 5)
        #expect(after.deliveries.keys.sorted() == [9])
    }

    @Test(
        "a walk over random deliveries and completions: every command is delivered before the floor passes it, and done ones never come back",
        arguments: 0..<20
    )
    func randomWalk(_ seed: Int) {
        var random = SplitMix64(state: UInt64(seed))
        var queue = AgentQueue()
        var stored = Array(1...UInt64(40))
        var acknowledged: Set<UInt64> = []
        var deliveredOnce: Set<UInt64> = []
        for _ in 0..<400 {
            // A walk: the first stored message it delivers.
            if let next = stored.first(where: { queue.step(at: $0, maxInFlight: 8) == .deliver }),
                stored.prefix(while: { $0 < next }).allSatisfy({ queue.step(at: $0, maxInFlight: 8) == .skip })
            {
                #expect(!acknowledged.contains(next), "\(next) came back after it was acknowledged")
                queue.deliveries[next] = Delivery(done: false, dueIn: random.next() % 3 == 0 ? .seconds(-1) : .seconds(5))
                deliveredOnce.insert(next)
            }
            // An acknowledgement of one in flight, or a message expiring from the stream.
            let open = queue.deliveries.filter { !$0.value.done }.map(\.key).sorted()
            if !open.isEmpty, random.next() % 2 == 0 {
                let sequence = open[Int(random.next() % UInt64(open.count))]
                acknowledged.insert(sequence)
                queue.complete([sequence])
            }
            // The oldest stored message expires; the next walk reads past where it was.
            if random.next() % 50 == 0, !stored.isEmpty {
                stored.removeFirst()
                let next = stored.first(where: { $0 > queue.floor }) ?? .max
                queue.complete(queue.gone(in: (queue.floor + 1)..<next))
            }
            for sequence in stored where sequence <= queue.floor {
                #expect(deliveredOnce.contains(sequence), "the floor passed \(sequence), never delivered")
            }
        }
    }
}

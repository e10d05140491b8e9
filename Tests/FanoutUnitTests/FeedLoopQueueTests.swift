import NIOPosix
import Synchronization
import Testing

@testable import StreamFanout

@Suite("What a tenant feed has for one event loop: batches joined while the loop is busy, gaps in their place, bounded (unit)")
struct FeedLoopQueueTests {
    private func seqs(_ items: [FeedLoopQueue.Item]) -> [String] {
        items.map { item in
            switch item {
            case .events(let events): events.map { "\($0.seq)" }.joined(separator: ",")
            case .gap(let from, let to): "gap \(from)-\(to)"
            }
        }
    }

    @Test("the first append asks for the event loop, the next ones join it; take empties it and the next append asks again")
    func joined() {
        let queue = FeedLoopQueue(eventLoop: MultiThreadedEventLoopGroup.singleton.next())
        #expect(queue.append(.events([StreamOutboxTests.event(1), StreamOutboxTests.event(2)])) == (schedule: true, full: false))
        #expect(queue.append(.events([StreamOutboxTests.event(3)])) == (schedule: false, full: false))
        #expect(queue.append(.gap(from: 4, to: 5)) == (schedule: false, full: false))
        #expect(queue.append(.events([StreamOutboxTests.event(6)])) == (schedule: false, full: false))
        #expect(self.seqs(queue.take()) == ["1,2,3", "gap 4-5", "6"])
        #expect(queue.take().isEmpty)
        #expect(queue.append(.events([StreamOutboxTests.event(7)])).schedule)
        // Joined up to maxJoined events an item, no more.
        let many = (8..<(8 + Int64(FeedLoopQueue.maxJoined))).map { StreamOutboxTests.event($0) }
        #expect(queue.append(.events(Array(many.dropLast()))) == (schedule: false, full: false))
        #expect(queue.append(.events([many.last!, StreamOutboxTests.event(8 + Int64(FeedLoopQueue.maxJoined))])) == (schedule: false, full: false))
        let items = queue.take()
        #expect(items.count == 2)
        if case .events(let first) = items[0], case .events(let second) = items[1] {
            #expect(first.count == FeedLoopQueue.maxJoined)  // 7 and the 255 joined to it
            #expect(first.map(\.seq) + second.map(\.seq) == Array(7...(8 + Int64(FeedLoopQueue.maxJoined))))
        } else {
            Issue.record("two batches of events expected")
        }
    }

    @Test("past maxEvents the feed waits until the event loop takes what waits")
    func bounded() async throws {
        let queue = FeedLoopQueue(eventLoop: MultiThreadedEventLoopGroup.singleton.next())
        let batch = (1...256).map { StreamOutboxTests.event(Int64($0)) }
        var full = false
        var appended = 0
        while !full {
            full = queue.append(.events(batch)).full
            appended += batch.count
        }
        #expect(appended == FeedLoopQueue.maxEvents + batch.count)
        let waited = Flag()
        let waiting = Task {
            await queue.waitUntilTaken()
            waited.set()
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(!waited.isSet)
        let items = queue.take()
        #expect(items.count == appended / batch.count)  // full batches are not joined
        await waiting.value
        #expect(waited.isSet)
        await queue.waitUntilTaken()  // nothing waits: returns at once
    }

    @Test("a feed waiting past the bound is let go when it is cancelled (the feed stopping)")
    func cancelled() async throws {
        let queue = FeedLoopQueue(eventLoop: MultiThreadedEventLoopGroup.singleton.next())
        let batch = (1...256).map { StreamOutboxTests.event(Int64($0)) }
        while !queue.append(.events(batch)).full {}
        let waiting = Task { await queue.waitUntilTaken() }
        try await Task.sleep(for: .milliseconds(20))
        waiting.cancel()
        await waiting.value  // returns: a hang here fails the run's deadline
        #expect(!queue.take().isEmpty)  // nothing was taken meanwhile
    }
}

private final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { self.value.withLock { $0 } }
    func set() { self.value.withLock { $0 = true } }
}

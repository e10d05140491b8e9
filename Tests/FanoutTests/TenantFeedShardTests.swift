import Dispatch
import NIOCore
import NIOPosix
import ServiceKit
import Synchronization
import Testing

@testable import StreamFanout

/// A listener that records the seqs offered to it and where.
private final class Recorder: FeedListener {
    let eventLoop: any EventLoop
    let offered = Mutex<[Int64]>([])
    let offLoop = Atomic<Int>(0)

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func offer(_ events: [FeedEvent]) {
        if !self.eventLoop.inEventLoop { self.offLoop.add(1, ordering: .relaxed) }
        self.offered.withLock { $0 += events.map(\.seq) }
    }

    func offerGap(from: Int64, to: Int64) {}
    func feedEnded() {}
}

@Suite("A tenant feed's shards: a batch handed to each event loop's listeners there, in order, with at most maxBatchesInFlight on their way (unit)")
struct TenantFeedShardTests {
    @Test("past the bound the feed waits for the event loop; a cancelled wait hands nothing over; all arrive in order")
    func bounded() async throws {
        // An event loop of the test's own: it is held busy below.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let listeners = [Recorder(eventLoop: loop), Recorder(eventLoop: loop)]
        let shard = TenantFeed.Shard(eventLoop: loop, listeners: listeners)
        let permits = AsyncPermits(TenantFeed.maxBatchesInFlight)

        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }  // never leave the loop blocked
        loop.execute { release.wait() }
        for seq in 1...Int64(TenantFeed.maxBatchesInFlight) {
            #expect(await shard.onEventLoop(holding: permits) { $0.offer([StreamOutboxTests.event(seq)]) })
        }
        let next = Int64(TenantFeed.maxBatchesInFlight + 1)
        let waiting = Task { await shard.onEventLoop(holding: permits) { $0.offer([StreamOutboxTests.event(next)]) } }
        let cancelled = Task { await shard.onEventLoop(holding: permits) { $0.offer([StreamOutboxTests.event(-1)]) } }
        let deadline = ContinuousClock.now + .seconds(10)
        while permits.waiting < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(permits.waiting == 2)
        #expect(listeners.allSatisfy { $0.offered.withLock { $0.isEmpty } })  // nothing ran yet
        cancelled.cancel()
        #expect(await !cancelled.value)

        release.signal()
        #expect(await waiting.value)
        try await loop.submit {}.get()
        for listener in listeners {
            #expect(listener.offered.withLock { $0 } == Array(1...next))
            #expect(listener.offLoop.load(ordering: .relaxed) == 0)
        }
        try await group.shutdownGracefully()
    }
}

import Contracts
import EventLog
import Logging
import NIOCore
import ServiceKit
import Synchronization

/// Something that takes a tenant's events in seq order: a connection.
protocol FeedListener: AnyObject, Sendable {
    /// Where ``offer(_:)`` and ``offerGap(from:to:)`` are called: the connection's socket's
    /// event loop.
    var eventLoop: any EventLoop { get }
    /// The next events of the tenant (every one, in seq order, without gaps): what one or
    /// more NATS batches brought, at most ``TenantFeed/maxBatch``, the same array for every
    /// listener on the event loop.
    func offer(_ events: [FeedEvent])
    /// Events `from...to` were committed but cannot be delivered (the log was unreachable for
    /// their back-fill).
    func offerGap(from: Int64, to: Int64)
    /// The feed stopped (its NATS subscription ended): nothing more will come.
    func feedEnded()
}

/// One tenant's live feed on this replica: one NATS subscription shared by every connection of
/// the tenant, each event parsed once and handed to every listener in seq order.
///
/// Listeners are kept by event loop: a batch is handed to the listeners of each event loop
/// there (``FeedLoopQueue``: batches that arrive while the event loop is busy go together, in
/// order), where a connection writes it to its socket at once when it can
/// (``WebSocketIdleWriter/writeAvailable(to:)``), with no task woken per connection.
///
/// Contiguity: an event whose seq is past the next one expected means publishes were lost or
/// overtaken (ingest replicas publish independently). Since seqs are assigned under the
/// tenant's row lock, a committed seq means every lower seq is committed too, so the missing
/// ones are read from the log at once and delivered first; their late copies are dropped.
final class TenantFeed: Sendable {
    private struct Waiter {
        var continuation: CheckedContinuation<Int64, any Error>
        var listener: any FeedListener
        var arm: @Sendable (Int64) -> Void
    }

    private struct State {
        /// The last seq handed to listeners; nil until the feed has read the log's head.
        var head: Int64?
        var listeners: [ObjectIdentifier: any FeedListener] = [:] {
            didSet { self.snapshot = nil }
        }
        /// The listeners by event loop, made again after a join or a leave, for delivery (each
        /// batch takes it as it is: no copy per batch).
        var snapshot: [ObjectIdentifier: [any FeedListener]]?
        /// A queue per event loop that has had listeners (as many as the server's event loops).
        var queues: [ObjectIdentifier: FeedLoopQueue] = [:]

        /// The listeners by event loop.
        mutating func byEventLoop() -> [ObjectIdentifier: [any FeedListener]] {
            if let snapshot = self.snapshot { return snapshot }
            var snapshot: [ObjectIdentifier: [any FeedListener]] = [:]
            for listener in self.listeners.values { snapshot[ObjectIdentifier(listener.eventLoop), default: []].append(listener) }
            self.snapshot = snapshot
            return snapshot
        }

        /// The queues of the event loops that have listeners now.
        mutating func queuesInUse() -> [FeedLoopQueue] {
            self.byEventLoop().keys.compactMap { self.queues[$0] }
        }

        mutating func add(_ listener: any FeedListener) {
            self.listeners[ObjectIdentifier(listener)] = listener
            let loop = listener.eventLoop
            if self.queues[ObjectIdentifier(loop)] == nil { self.queues[ObjectIdentifier(loop)] = FeedLoopQueue(eventLoop: loop) }
        }

        var waiting: [Waiter] = []
        var failure: (any Error)?
        /// The head at the hub's previous tail check.
        var lastChecked: Int64 = -1
    }

    /// Events offered to a listener at once at most (a NATS batch can be larger; batches that
    /// wait for a busy event loop are joined up to this).
    static let maxBatch = 256

    let tenant: String
    /// To tell a batch's subject from a single event's.
    private let subjects: Subjects
    private let state = Mutex(State())
    private let reader: EventLogReader
    private let logger: Logger
    /// Message handling and the tail check take turns.
    private let serializer = AsyncSerializer()
    private let backfilled = FanoutMetrics.backfilled

    init(tenant: String, subjects: Subjects, reader: EventLogReader, logger: Logger) {
        self.tenant = tenant
        self.subjects = subjects
        self.reader = reader
        self.logger = logger
    }

    /// Adds `listener`: `arm` runs with the head at that instant, under the feed's lock, so
    /// the listener can prepare for exactly the events after it, which it is then offered.
    /// Returns the same head: up to it, the listener replays from the log.
    func join(_ listener: any FeedListener, arm: @escaping @Sendable (Int64) -> Void) async throws -> Int64 {
        try await withCheckedThrowingContinuation { continuation in
            let outcome: Result<Int64, any Error>? = self.state.withLock { state in
                if let failure = state.failure { return .failure(failure) }  // an ended feed
                if let head = state.head {
                    arm(head)
                    state.add(listener)
                    return .success(head)
                }
                state.waiting.append(Waiter(continuation: continuation, listener: listener, arm: arm))
                return nil
            }
            if let outcome { continuation.resume(with: outcome) }
        }
    }

    func leave(_ listener: any FeedListener) {
        _ = self.state.withLock { $0.listeners.removeValue(forKey: ObjectIdentifier(listener)) }
    }

    /// The last seq handed to listeners.
    var head: Int64? { self.state.withLock { $0.head } }

    /// Reads the subscription until it ends. `subscription` must be active (flushed) before
    /// this reads the head, so nothing committed after the head can be missed.
    func run(_ subscription: NATSSubscription) async {
        let head: Int64
        do {
            head = try await self.reader.head(tenant: self.tenant)
        } catch {
            self.logger.warning(
                "tenant feed cannot read the log's head",
                metadata: ["tenant": "\(self.tenant)", "error": "\(String(reflecting: error))"]
            )
            let failure = APIError(.serviceUnavailable, "the event log is unavailable; retry", retryAfterSeconds: 1)
            let waiting = self.state.withLock { state in
                state.failure = failure
                defer { state.waiting = [] }
                return state.waiting
            }
            for waiter in waiting { waiter.continuation.resume(throwing: failure) }
            return
        }
        let waiting = self.state.withLock { state in
            state.head = head
            for waiter in state.waiting {
                waiter.arm(head)
                state.add(waiter.listener)
            }
            defer { state.waiting = [] }
            return state.waiting
        }
        for waiter in waiting { waiter.continuation.resume(returning: head) }

        for await messages in subscription.batches {
            let received = NIODeadline.now()
            var events: [FeedEvent] = []
            events.reserveCapacity(messages.count)
            for message in messages {
                guard let envelopes = try? BusEventBatch.envelopes(in: message.payload, subject: message.subject, subjects: self.subjects)
                else {
                    self.logger.warning("undecodable message on the live feed", metadata: ["subject": "\(message.subject)"])
                    continue
                }
                for envelope in envelopes {
                    // The subject is the tenant's; an envelope naming another tenant was not
                    // published by ingest for this one.
                    guard envelope.tenantID == self.tenant else {
                        self.logger.warning(
                            "an envelope of another tenant on this tenant's subject, dropped",
                            metadata: ["subject": "\(message.subject)", "tenant": "\(envelope.tenantID)"]
                        )
                        continue
                    }
                    events.append(FeedEvent(envelope, received: received))
                }
            }
            guard !events.isEmpty else { continue }
            await self.serializer.run {
                // The batch's deliverable events go to the listeners together; a back-fill
                // goes between what came before it and the event that revealed it.
                var ready: [FeedEvent] = []
                for event in events {
                    switch FeedContiguity.step(head: ready.last?.seq ?? self.head, seq: event.seq) {
                    case .drop:
                        continue
                    case .deliver:
                        break
                    case .backfillThenDeliver(let from, let to):
                        await self.deliver(ready)
                        ready.removeAll()
                        await self.backfill(from: from, to: to)
                    }
                    ready.append(event)
                }
                await self.deliver(ready)
            }
        }
        // The subscription ended (the connection closed or drained): the listeners must go
        // elsewhere.
        let listeners = self.state.withLock { state in
            state.failure = APIError(.serviceUnavailable, "the live feed ended; retry", retryAfterSeconds: 1)
            defer { state.listeners = [:] }
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.feedEnded() }
    }

    /// For the hub's tail check: the head, if it has not moved since the previous call.
    func idleHead() -> Int64? {
        self.state.withLock { state in
            guard let head = state.head else { return nil }
            defer { state.lastChecked = head }
            return state.lastChecked == head ? head : nil
        }
    }

    /// A publish lost after the last commit has no later event to reveal it: the hub's tail
    /// check found the log ahead of this (silent) feed; back-fill the difference.
    func catchUp(toLogHead logHead: Int64) async {
        await self.serializer.run {
            guard let range = FeedContiguity.catchUp(head: self.head, logHead: logHead) else { return }
            self.logger.info(
                "live feed behind the log; back-filling",
                metadata: ["tenant": "\(self.tenant)", "from": "\(range.lowerBound)", "to": "\(range.upperBound)"]
            )
            await self.backfill(from: range.lowerBound, to: range.upperBound)
        }
    }

    /// Hands `events` (in seq order, following the head) to every listener, at most
    /// ``maxBatch`` at a time, on their event loops.
    private func deliver(_ events: [FeedEvent]) async {
        guard events.count <= Self.maxBatch else {
            for start in stride(from: 0, to: events.count, by: Self.maxBatch) {
                await self.deliver(Array(events[start..<min(start + Self.maxBatch, events.count)]))
            }
            return
        }
        guard let last = events.last else { return }
        let queues = self.state.withLock { state in
            state.head = last.seq
            return state.queuesInUse()
        }
        for queue in queues { await self.hand(.events(events), to: queue) }
    }

    /// Adds `item` to what waits for an event loop's listeners, asking the event loop to offer
    /// it if it was not asked yet; past the queue's bound, waits for the event loop.
    private func hand(_ item: FeedLoopQueue.Item, to queue: FeedLoopQueue) async {
        let (schedule, full) = queue.append(item)
        if schedule { queue.eventLoop.execute { self.offerWaiting(in: queue) } }
        if full { await queue.waitUntilTaken() }
    }

    /// On the queue's event loop: offers everything waiting to the listeners there now (one
    /// that joined after an event was queued drops it: it replays up to its head).
    private func offerWaiting(in queue: FeedLoopQueue) {
        let items = queue.take()
        guard !items.isEmpty else { return }
        let listeners = self.state.withLock { $0.byEventLoop()[ObjectIdentifier(queue.eventLoop)] } ?? []
        for item in items {
            switch item {
            case .events(let events):
                for listener in listeners { listener.offer(events) }
            case .gap(let from, let to):
                for listener in listeners { listener.offerGap(from: from, to: to) }
            }
        }
    }

    private func backfill(from: Int64, to: Int64) async {
        var backfill = FeedContiguity.Backfill(from: from, to: to)
        do {
            while backfill.wantsMore {
                let page = try await self.reader.events(
                    tenant: self.tenant,
                    after: backfill.after,
                    through: to,
                    filter: .everything,
                    limit: 1000,
                    maxBytes: StreamSession.pageBytes
                )
                await self.deliver(backfill.take(page.map(\.seq)).map { page[$0] })
                self.backfilled.increment(by: page.count)
            }
        } catch {
            self.logger.warning(
                "live feed gap not back-filled",
                metadata: ["tenant": "\(self.tenant)", "from": "\(backfill.after + 1)", "to": "\(to)", "error": "\(String(reflecting: error))"]
            )
        }
        if let gap = backfill.gap {
            // Not in the log (or the log is unreachable): tell every listener, and move on.
            let queues = self.state.withLock { state in
                state.head = to
                return state.queuesInUse()
            }
            for queue in queues { await self.hand(.gap(from: gap.lowerBound, to: gap.upperBound), to: queue) }
        }
    }
}

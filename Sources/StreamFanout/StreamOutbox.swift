import NIOCore
import Synchronization

/// What a connection's writer does next.
enum OutboxItem: Sendable {
    /// A protocol message (acknowledgement, error, ping, gap notice): always sent, first.
    case control(ByteBuffer)
    /// A live event of subscription `generation`; `after` is the seq up to which everything
    /// was queued or filtered out when it was queued.
    case event(FeedEvent, after: Int64, generation: Int)
    /// Live events were dropped because the queue was full: catch up from the log.
    case catchUp
    case closed
}

/// A connection's bounded queue between its tenant's feed (which never waits) and its writer
/// (which waits for the socket).
///
/// Past ``maxEvents`` or ``maxBytes`` it stops queueing live events and marks itself
/// overflowed; once the writer has sent what was queued, it catches up from the event log.
/// Control messages are few (they answer client messages, which are rate-limited) and bypass
/// the bounds.
final class StreamOutbox: Sendable {
    private struct State {
        var control: [ByteBuffer] = []
        var events: [(FeedEvent, Int64)] = []
        var generation = 0
        var reserved = 0
        var eventsHead = 0
        var bytes = 0
        /// Everything up to this seq is queued or filtered out (not dropped).
        var accounted: Int64 = 0
        var overflowed = false
        var closed = false
        var filter: StreamFilter?
        var waiter: CheckedContinuation<OutboxItem, Never>?
    }

    private let state = Mutex(State())
    let maxEvents: Int
    let maxBytes: Int

    init(maxEvents: Int, maxBytes: Int) {
        self.maxEvents = maxEvents
        self.maxBytes = maxBytes
    }

    /// Starts a subscription (or, with no filter, ends one): live events after `head` that
    /// match `filter` are queued from now on; anything queued before is discarded. Sets the
    /// subscription's `generation` (from ``nextGeneration()``), which its events carry.
    func subscribe(_ filter: StreamFilter?, head: Int64, generation: Int) {
        self.state.withLock { state in
            state.generation = generation
            state.filter = filter
            state.events = []
            state.eventsHead = 0
            state.bytes = 0
            state.accounted = head
            state.overflowed = false
        }
    }

    /// A new generation number for ``subscribe(_:head:generation:)``.
    func nextGeneration() -> Int {
        self.state.withLock { state in
            state.reserved += 1
            return state.reserved
        }
    }

    /// A live event from the feed. Never waits.
    func offer(_ event: FeedEvent) {
        let waiter: CheckedContinuation<OutboxItem, Never>? = self.state.withLock { state in
            guard let filter = state.filter, !state.closed, !state.overflowed, event.seq > state.accounted else { return nil }
            guard filter.matches(event) else {
                state.accounted = event.seq
                return nil
            }
            guard state.events.count - state.eventsHead < self.maxEvents, state.bytes + event.frame.readableBytes <= self.maxBytes else {
                state.overflowed = true
                return Self.take(&state)
            }
            state.events.append((event, state.accounted))
            state.bytes += event.frame.readableBytes
            state.accounted = event.seq
            return Self.take(&state)
        }
        waiter?.resume(returning: self.next(locked: ()))
    }

    /// Queues a protocol message.
    func send(_ message: ByteBuffer) {
        let waiter = self.state.withLock { state -> CheckedContinuation<OutboxItem, Never>? in
            guard !state.closed else { return nil }
            state.control.append(message)
            return Self.take(&state)
        }
        waiter?.resume(returning: self.next(locked: ()))
    }

    /// The writer is catching up from the log through `seq`: live events up to it are covered.
    func caughtUp(through seq: Int64) {
        self.state.withLock { state in
            state.overflowed = false
            state.accounted = max(state.accounted, seq)
        }
    }

    func close() {
        let waiter = self.state.withLock { state -> CheckedContinuation<OutboxItem, Never>? in
            state.closed = true
            return Self.take(&state)
        }
        waiter?.resume(returning: .closed)
    }

    /// The next thing to write; waits when there is none.
    func next() async -> OutboxItem {
        await withCheckedContinuation { continuation in
            let item: OutboxItem? = self.state.withLock { state in
                if let item = Self.pop(&state) { return item }
                state.waiter = continuation
                return nil
            }
            if let item { continuation.resume(returning: item) }
        }
    }

    private static func take(_ state: inout State) -> CheckedContinuation<OutboxItem, Never>? {
        defer { state.waiter = nil }
        return state.waiter
    }

    /// Pops under the lock for a waiter just taken; the waiter exists only when nothing was
    /// ready, so something is now.
    private func next(locked: Void) -> OutboxItem {
        self.state.withLock { Self.pop(&$0) } ?? .closed
    }

    private static func pop(_ state: inout State) -> OutboxItem? {
        if state.closed { return .closed }
        if !state.control.isEmpty { return .control(state.control.removeFirst()) }
        if state.eventsHead < state.events.count {
            let (event, after) = state.events[state.eventsHead]
            state.eventsHead += 1
            state.bytes -= event.frame.readableBytes
            if state.eventsHead == state.events.count {
                state.events.removeAll(keepingCapacity: true)
                state.eventsHead = 0
            } else if state.eventsHead > 1024 && state.eventsHead * 2 > state.events.count {
                state.events.removeFirst(state.eventsHead)
                state.eventsHead = 0
            }
            return .event(event, after: after, generation: state.generation)
        }
        if state.overflowed { return .catchUp }
        return nil
    }
}

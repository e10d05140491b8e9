import NIOCore
import Synchronization

/// What a connection's writer does next.
enum OutboxItem: Sendable {
    /// A protocol message (acknowledgement, error, ping): sent before queued events.
    case control(ByteBuffer)
    /// A live event of subscription `generation`. Everything in `(after, event.seq)` was
    /// filtered out for this connection; `after` itself was queued, or replayed by the writer.
    case event(FeedEvent, after: Int64, generation: Int)
    /// The feed could not deliver `from...to` (the log was unreachable for its back-fill).
    case gap(from: Int64, to: Int64, generation: Int)
    /// Live events were dropped because the queue was full: catch up from the log.
    case catchUp(generation: Int)
    /// A client request for the writer to handle in order with the events.
    case request(String)
    /// Time passed (the writer's timers: collapsed-line notices).
    case tick
    /// Send a WebSocket ping frame.
    case ping
    case closed
}

/// A connection's bounded queue between its tenant's feed (which never waits) and its writer
/// (which waits for the socket).
///
/// Past ``maxEvents`` or ``maxBytes`` it stops queueing live events and marks itself
/// overflowed; once the writer has sent what was queued, it catches up from the event log
/// through ``caughtUp()``. Control messages are few (they answer client messages, which are
/// rate-limited) and bypass the bounds.
final class StreamOutbox: Sendable {
    private enum Queued {
        case event(FeedEvent, after: Int64)
        case gap(from: Int64, to: Int64)
    }

    private struct State {
        var control: [ByteBuffer] = []
        var requests: [String] = []
        var ticked = false
        var pingWanted = false
        var queue: [Queued] = []
        var queueHead = 0
        var events = 0
        var bytes = 0
        /// The seq the next queued event follows: advanced by queued events, a subscription's
        /// head and a catch-up; not by filtered ones.
        var accounted: Int64 = 0
        /// The last seq the feed offered, whatever became of it.
        var lastOffered: Int64 = 0
        var overflowed = false
        var closed = false
        var filter: StreamFilter?
        var generation = 0
        var reserved = 0
        /// The idle writer's wake: called once something is ready.
        var wake: (@Sendable () -> Void)?

        /// Whether ``pop(_:)`` would give something.
        var hasReady: Bool { self.hasWork || self.ticked }

        /// Whether something other than a tick is ready.
        var hasWork: Bool {
            self.closed || !self.control.isEmpty || self.pingWanted || !self.requests.isEmpty || self.queueHead < self.queue.count
                || self.overflowed
        }
    }

    private let state = Mutex(State())
    let maxEvents: Int
    let maxBytes: Int

    init(maxEvents: Int, maxBytes: Int) {
        self.maxEvents = maxEvents
        self.maxBytes = maxBytes
    }

    /// Changes the filter of the current subscription for events offered from now on (what is
    /// queued stays).
    func refilter(_ change: (inout StreamFilter) -> Void) {
        self.state.withLock { state in
            guard state.filter != nil else { return }
            change(&state.filter!)
        }
    }

    /// A new generation number for ``subscribe(_:head:generation:)``.
    func nextGeneration() -> Int {
        self.state.withLock { state in
            state.reserved += 1
            return state.reserved
        }
    }

    /// Starts a subscription (or, with no filter, ends one): live events after `head` that
    /// match `filter` are queued from now on, as `generation`; anything queued before is
    /// discarded. Called under the feed's lock when joining, so no event falls in between.
    func subscribe(_ filter: StreamFilter?, head: Int64, generation: Int) {
        self.state.withLock { state in
            state.generation = generation
            state.filter = filter
            state.queue = []
            state.queueHead = 0
            state.events = 0
            state.bytes = 0
            state.accounted = head
            state.lastOffered = head
            state.overflowed = false
        }
    }

    /// Live events from the feed, in seq order: one lock and at most one wake-up for all of
    /// them. Never waits.
    func offer(_ events: [FeedEvent]) {
        self.deliver { state in
            guard let filter = state.filter, !state.closed else { return }
            for event in events where event.seq > state.lastOffered {
                state.lastOffered = event.seq
                guard !state.overflowed, filter.matches(event) else { continue }
                guard state.events < self.maxEvents, state.bytes + event.frame.readableBytes <= self.maxBytes else {
                    state.overflowed = true
                    continue
                }
                state.queue.append(.event(event, after: state.accounted))
                state.events += 1
                state.bytes += event.frame.readableBytes
                state.accounted = event.seq
            }
        }
    }

    /// Seqs the feed could not deliver, in order with the events.
    func offerGap(from: Int64, to: Int64) {
        self.deliver { state in
            guard state.filter != nil, !state.closed, to > state.lastOffered else { return }
            state.lastOffered = to
            guard !state.overflowed else { return }
            state.queue.append(.gap(from: max(from, state.accounted + 1), to: to))
            state.accounted = to
        }
    }

    /// Queues a protocol message.
    func send(_ message: ByteBuffer) {
        self.deliver { state in
            guard !state.closed else { return }
            state.control.append(message)
        }
    }

    /// Wakes the writer with a `.tick` (after anything queued).
    func tick() {
        self.deliver { $0.ticked = true }
    }

    /// Asks the writer for a WebSocket ping frame (one, however often asked before it is sent).
    func ping() {
        self.deliver { $0.pingWanted = true }
    }

    /// Queues a client request for the writer (requests are rate-limited by the reader).
    func forward(_ request: String) {
        self.deliver { state in
            guard !state.closed else { return }
            state.requests.append(request)
        }
    }

    /// The writer starts catching up from the log: returns the seq through which it must
    /// replay; live events after it are queued again.
    func caughtUp() -> Int64 {
        self.state.withLock { state in
            state.overflowed = false
            state.accounted = state.lastOffered
            return state.lastOffered
        }
    }

    func close() {
        self.deliver { $0.closed = true }
    }

    /// Whether nothing but a tick is ready: the end of a burst.
    var isIdle: Bool {
        self.state.withLock { !$0.hasWork }
    }

    /// Everything ready now, at most `limit` items (one lock): what the writer writes as one
    /// batch. Ends after a catch-up or the close; empty when nothing is ready.
    func drain(into items: inout [OutboxItem], limit: Int) {
        self.state.withLock { state in
            while items.count < limit, let item = Self.pop(&state) {
                items.append(item)
                switch item {
                case .catchUp, .closed: return
                default: continue
                }
            }
        }
    }

    /// Arms `wake` for when something is ready (the writer holds no task meanwhile); false,
    /// without keeping it, when something is ready already.
    func sleep(until wake: @escaping @Sendable () -> Void) -> Bool {
        self.state.withLock { state in
            guard !state.hasReady else { return false }
            // The writer goes idle: a burst's capacity is not kept by a quiet connection.
            if state.queue.capacity > 8 { state.queue = [] }
            state.wake = wake
            return true
        }
    }

    /// Changes the state and, when that made something ready for an idle writer, wakes it
    /// (once: the wake is taken under the same lock).
    private func deliver(_ change: (inout State) -> Void) {
        let wake: (@Sendable () -> Void)? = self.state.withLock { state in
            change(&state)
            guard state.hasReady, let wake = state.wake else { return nil }
            state.wake = nil
            return wake
        }
        wake?()
    }

    private static func pop(_ state: inout State) -> OutboxItem? {
        if state.closed { return .closed }
        if !state.control.isEmpty { return .control(state.control.removeFirst()) }
        if state.pingWanted {
            state.pingWanted = false
            return .ping
        }
        if !state.requests.isEmpty { return .request(state.requests.removeFirst()) }
        if state.queueHead < state.queue.count {
            let queued = state.queue[state.queueHead]
            state.queueHead += 1
            if state.queueHead == state.queue.count {
                state.queue.removeAll(keepingCapacity: true)
                state.queueHead = 0
            } else if state.queueHead > 1024 && state.queueHead * 2 > state.queue.count {
                state.queue.removeFirst(state.queueHead)
                state.queueHead = 0
            }
            switch queued {
            case .event(let event, let after):
                state.events -= 1
                state.bytes -= event.frame.readableBytes
                return .event(event, after: after, generation: state.generation)
            case .gap(let from, let to):
                return .gap(from: from, to: to, generation: state.generation)
            }
        }
        if state.overflowed { return .catchUp(generation: state.generation) }
        if state.ticked {
            state.ticked = false
            return .tick
        }
        return nil
    }
}

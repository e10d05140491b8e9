import Contracts
import EventLog
import Foundation
import Logging
import NIOCore
import NIOWebSocket
import ServiceKit
import Synchronization

/// One `/v1/stream` connection speaking protocol 1 (docs/stream-protocol.md): reads client
/// messages, keeps one subscription, and writes its events, replayed from the log and then
/// live, in seq order without gaps or repeats (or with an explicit `gap` notice). The
/// connection itself (the reader, the writer's runs, budgets, pings, close) is ServiceKit's
/// ``WebSocketConnection``; this is the protocol.
final class StreamSession: FeedListener, WebSocketIdleWriter, Sendable {
    struct State {
        var feed: TenantFeed?
        /// A new subscription, for the writer: its acknowledgement, then a replay of
        /// `(from, head]`, then its live events (those of `generation`).
        var resume: Resume?
        var eventsPerSecond: Int
        /// The writer holds collapsed lines not yet announced.
        var collapsePending = false
    }

    struct Resume {
        var from: Int64
        var head: Int64
        var acknowledgement: ByteBuffer
        var generation: Int
        var filter: StreamFilter
        var eventsPerSecond: Int
        var collapseRepeats: Bool
        var batchEvents: Bool
    }

    /// The writer's state between its runs: the writer runs whenever something is ready, one
    /// run at a time (on the event loop, or in a short task when it must wait), so only it
    /// touches this.
    final class WriterMemory: @unchecked Sendable {
        /// nil only while a run that waits has it (``take()``).
        private var state: WriterState?

        init(eventsPerSecond: Int) {
            self.state = WriterState(eventsPerSecond: eventsPerSecond)
        }

        /// Runs `body` on the state, in place (a run that does not wait).
        func with<Result>(_ body: (inout WriterState) throws -> Result) rethrows -> Result {
            try body(&self.state!)
        }

        /// The state, for a run that waits (it cannot be changed in place across a wait); put
        /// it back with ``put(_:)``.
        func take() -> WriterState {
            defer { self.state = nil }
            return self.state!
        }

        func put(_ state: WriterState) {
            self.state = state
        }
    }

    /// What the writer knows of the connection: where it is in the tenant's seqs, the
    /// subscription it writes, its rate cap, what it collapsed and batched, and the outbox items
    /// it took and has not written yet.
    struct WriterState {
        /// Everything the client should have up to here was sent or announced.
        var cursor: Int64 = 0
        var generation = 0
        var filter = StreamFilter.everything
        var limiter: TokenBucket
        /// Seqs skipped by the rate cap and not yet announced.
        var skipped: (from: Int64, to: Int64)?
        var collapse = Collapser(enabled: false)
        var batch = Batch()
        /// What the outbox had ready, taken under one lock and written as one batch, and the
        /// next of it to write.
        var ready: [OutboxItem] = []
        var next = 0
        /// Live events written and not yet counted (counted per batch, not per event).
        var delivered = 0
        /// The oldest live event written in this batch, for `fanout_delivery_seconds`.
        var oldestReceived: NIODeadline?

        init(eventsPerSecond: Int) {
            self.limiter = TokenBucket(capacity: Double(eventsPerSecond), perSecond: Double(eventsPerSecond))
        }
    }

    /// Events waiting to go out together (with `batchEvents`): a JSON array in one message.
    struct Batch {
        var enabled = false
        var frames: [ByteBuffer] = []
        var bytes = 0
    }

    let tenant: String
    let settings: FanoutSettings
    let hub: FeedHub
    let reader: EventLogReader
    /// The replica's replay pages in flight.
    let replays: AsyncPermits
    let logger: Logger
    let outbox: StreamOutbox
    let state: Mutex<State>
    let connection: WebSocketConnection
    /// The socket's event loop, where the feed offers its events and the writer runs while it
    /// need not wait.
    let eventLoop: any EventLoop
    /// Outbox items the writer takes under one lock at most.
    static let itemsPerBatch = 256
    let writerMemory: WriterMemory
    /// Whether `state.resume` holds a subscription the writer has not started (read by the
    /// writer before each item without taking the lock).
    let resumeWaiting = Atomic<Bool>(false)
    /// The stream protocol writes on the event loop (``writeAvailable(to:)``).
    var writesOnEventLoop: Bool { true }

    /// The most events one page read from the log holds.
    static let pageRows = 1000
    /// The most frame bytes one page read from the log holds (at least one event).
    static let pageBytes = 4 << 20
    /// The seqs one replay query looks at, so that no statement scans the whole log.
    static let scanWindow: Int64 = 50_000

    init(
        identity: AccessIdentity,
        eventLoop: any EventLoop,
        settings: FanoutSettings,
        hub: FeedHub,
        reader: EventLogReader,
        replays: AsyncPermits,
        heartbeats: WebSocketHeartbeats,
        logger: Logger
    ) {
        self.tenant = identity.tenant
        self.eventLoop = eventLoop
        self.settings = settings
        self.hub = hub
        self.reader = reader
        self.replays = replays
        self.logger = logger
        self.outbox = StreamOutbox(maxEvents: settings.queueEvents, maxBytes: settings.queueBytes)
        self.state = Mutex(State(eventsPerSecond: settings.defaultEventsPerSecond))
        self.writerMemory = WriterMemory(eventsPerSecond: settings.defaultEventsPerSecond)
        self.connection = WebSocketConnection(
            limits: settings.webSocketLimits(liveness: .clientMessages),
            heartbeats: heartbeats,
            identity: identity,
            logger: logger
        )
    }

    // MARK: FeedListener

    func offer(_ events: [FeedEvent]) {
        self.outbox.offer(events)
    }

    func offerGap(from: Int64, to: Int64) {
        self.outbox.offerGap(from: from, to: to)
    }

    func feedEnded() {
        self.connection.close(.unexpectedServerError, "the live feed ended; reconnect and resume")
    }

    // MARK: The connection

    /// Serves the connection until the client leaves or breaks the protocol, holding no task
    /// while there is nothing to write; `whenDone` runs once it has ended.
    func start(on socket: UpgradedWebSocket, whenDone: @escaping @Sendable () -> Void) {
        FanoutMetrics.connections.increment(by: 1)
        self.connection.start(on: socket, handler: self) {
            FanoutMetrics.connections.decrement(by: 1)
            whenDone()
        }
    }

    func received(_ message: WebSocketClientMessage, on connection: WebSocketConnection) async -> Bool {
        guard case .text(let text) = message else {
            self.outbox.send(ServerMessage.error(.invalidRequest, "protocol 1 messages are JSON text frames", requestID: nil))
            return false
        }
        return await self.handle(text)
    }

    func stop() {
        self.outbox.close()
    }

    func ping() {
        self.outbox.send(ServerMessage.ping(now: Date()))
    }

    /// Ticks the writer while it holds collapsed lines (they are announced within a second).
    func heartbeat() {
        if self.state.withLock({ $0.collapsePending }) { self.outbox.tick() }
    }

    /// Off the feed before the close frame: a close frame to a stalled socket can take a while.
    func finish() async {
        if let feed = self.state.withLock({ state -> TenantFeed? in
            defer { state.feed = nil }
            return state.feed
        }) {
            self.hub.release(feed, leaving: self)
        }
    }

    // MARK: Reading

    /// Handles one client message; false when it was invalid (an error was sent).
    private func handle(_ text: String) async -> Bool {
        let message: StreamClientMessage
        do {
            message = try JSONDecoder().decode(StreamClientMessage.self, from: Data(text.utf8))
        } catch {
            self.outbox.send(ServerMessage.error(.invalidRequest, "not a protocol 1 message: \(describeDecodingFailure(error))", requestID: nil))
            return false
        }
        switch message.type {
        case "subscribe":
            return await self.subscribe(message)
        case "unsubscribe":
            self.unsubscribe()
            self.outbox.send(ServerMessage.unsubscribed(requestID: message.requestId))
            return true
        case "pong":
            return true
        case "throttle":
            guard let rate = message.maxEventsPerSecond, (1...self.settings.maxEventsPerSecond).contains(rate) else {
                self.outbox.send(
                    ServerMessage.error(
                        .invalidRequest,
                        "throttle needs maxEventsPerSecond in 1...\(self.settings.maxEventsPerSecond)",
                        requestID: message.requestId
                    )
                )
                return false
            }
            self.state.withLock { $0.eventsPerSecond = rate }
            self.outbox.send(ServerMessage.throttled(requestID: message.requestId, maxEventsPerSecond: rate))
            return true
        default:
            self.outbox.send(ServerMessage.error(.invalidRequest, "unknown message type '\(message.type.prefix(64))'", requestID: message.requestId))
            return false
        }
    }

    private func subscribe(_ message: StreamClientMessage) async -> Bool {
        let filter: StreamFilter
        do {
            filter = try Self.filter(message.filters)
        } catch {
            self.outbox.send(ServerMessage.error(.invalidRequest, error.message, requestID: message.requestId))
            return false
        }
        // A time to replay from is the seq before the first event committed since.
        var lastEventID = message.lastEventId?.seq
        if let fromTime = message.fromTime {
            guard lastEventID == nil, fromTime >= 0 else {
                let problem = fromTime < 0 ? "fromTime is Unix milliseconds, not negative" : "send lastEventId or fromTime, not both"
                self.outbox.send(ServerMessage.error(.invalidRequest, problem, requestID: message.requestId))
                return false
            }
            do {
                let first = try await self.reader.firstSeq(tenant: self.tenant, committedSince: Date(milliseconds: fromTime))
                // Nothing committed since: live from the head.
                lastEventID = first.map { $0 - 1 }
            } catch {
                self.outbox.send(ServerMessage.error(.serviceUnavailable, "the event log is unavailable; retry", requestID: message.requestId))
                return true
            }
        }
        var askedRate = self.state.withLock { $0.eventsPerSecond }
        if let asked = message.maxEventsPerSecond {
            guard (1...self.settings.maxEventsPerSecond).contains(asked) else {
                self.outbox.send(
                    ServerMessage.error(
                        .invalidRequest,
                        "maxEventsPerSecond must be in 1...\(self.settings.maxEventsPerSecond)",
                        requestID: message.requestId
                    )
                )
                return false
            }
            askedRate = asked
        }
        let feed: TenantFeed
        if let existing = self.state.withLock({ $0.feed }) {
            feed = existing
        } else {
            do {
                feed = try await self.hub.acquire(tenant: self.tenant)
            } catch {
                self.outbox.send(ServerMessage.error(.serviceUnavailable, "the live feed is unavailable; retry", requestID: message.requestId))
                return true
            }
            self.state.withLock { $0.feed = feed }
        }
        // The new subscription takes effect under the feed's lock, at the head of that instant:
        // the outbox queues exactly the events after it, and the writer finds the resume
        // (acknowledgement, then a replay up to the head) before any of them.
        let generation = self.outbox.nextGeneration()
        let rate = askedRate
        let collapse = message.collapseRepeats ?? false
        let batchEvents = message.batchEvents ?? false
        let resumeAfter = lastEventID
        let requestID = message.requestId
        do {
            _ = try await feed.join(self) { head in
                let from = min(resumeAfter ?? head, head)
                self.state.withLock { state in
                    state.eventsPerSecond = rate
                    self.resumeWaiting.store(true, ordering: .releasing)
                    state.resume = Resume(
                        from: from,
                        head: head,
                        acknowledgement: ServerMessage.subscribed(requestID: requestID, from: from + 1, head: head, maxEventsPerSecond: rate),
                        generation: generation,
                        filter: filter,
                        eventsPerSecond: rate,
                        collapseRepeats: collapse,
                        batchEvents: batchEvents
                    )
                }
                self.outbox.subscribe(filter, head: head, generation: generation)
            }
        } catch {
            // Let go of a feed that could not start, so the next subscribe starts a new one.
            self.state.withLock { $0.feed = nil }
            self.hub.release(feed, leaving: self)
            self.outbox.send(ServerMessage.error(.serviceUnavailable, "the event log is unavailable; retry", requestID: message.requestId))
            return true
        }
        self.outbox.send(ByteBuffer())  // wakes the writer for the resume
        return true
    }

    private func unsubscribe() {
        self.state.withLock { state in
            state.resume = nil
            self.resumeWaiting.store(false, ordering: .releasing)
        }
        self.outbox.subscribe(nil, head: 0, generation: self.outbox.nextGeneration())
    }

    struct FilterError: Error {
        var message: String
    }

    static func filter(_ filters: StreamClientMessage.Filters?) throws(FilterError) -> StreamFilter {
        guard let filters else { return .everything }
        var filter = StreamFilter()
        for (name, ids, most) in [("swarmIds", filters.swarmIds, 1000), ("agentIds", filters.agentIds, 1000), ("tools", filters.tools, 100)] {
            guard let ids else { continue }
            guard ids.count <= most else { throw FilterError(message: "\(name) takes at most \(most) \(name == "tools" ? "names" : "ids")") }
            guard ids.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 256 }) else {
                throw FilterError(message: "\(name) must be \(name == "tools" ? "names" : "ids") of 1 to 256 bytes")
            }
        }
        filter.swarmIDs = filters.swarmIds.map(Set.init)
        filter.agentIDs = filters.agentIds.map(Set.init)
        filter.tools = filters.tools.map { Set($0.map(EventFrame.renderedStringTail)) }
        if let name = filters.severityGte {
            guard let severity = BusSeverity(name: name) else {
                throw FilterError(message: "severityGte must be trace, debug, info, warn, error or fatal")
            }
            filter.minimumSeverity = severity
        }
        if let include = filters.include {
            var kinds = Set<BusEventKind>()
            for name in include {
                guard let kind = StreamFilter.kind(named: name) else { throw FilterError(message: "include: unknown kind '\(name.prefix(64))'") }
                kinds.insert(kind)
            }
            filter.kinds = kinds
        }
        return filter
    }
}

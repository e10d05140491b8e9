import EventLog
import Contracts
import Foundation
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import PostgresNIO
import ServiceKit
import Synchronization

/// One `/v1/stream` connection speaking protocol 1 (docs/stream-protocol.md): reads client
/// messages, keeps one subscription, and writes its events, replayed from the log and then
/// live, in seq order without gaps or repeats (or with an explicit `gap` notice).
final class StreamSession: FeedListener, Heartbeating, Sendable {
    private struct State {
        var feed: TenantFeed?
        var subscribed = false
        var requestID: String?
        var filter = StreamFilter.everything
        /// A new subscription, for the writer: its acknowledgement, then a replay of
        /// `(from, head]`, then its live events (those of `generation`).
        var resume: Resume?
        var eventsPerSecond: Int
        var lastHeardFrom = ContinuousClock.now
        var lastWrite = ContinuousClock.now
        var writing = false
        var closeReason: (WebSocketErrorCode, String)?
        /// The writer holds collapsed lines not yet announced.
        var collapsePending = false
        // The heartbeat's own bookkeeping.
        var lastPing = ContinuousClock.now
        var pingedAfterHearing = 0
        var lastHeardSeen = ContinuousClock.now
        var done = false
    }

    private struct Resume {
        var from: Int64
        var head: Int64
        var acknowledgement: ByteBuffer
        var generation: Int
        var filter: StreamFilter
        var eventsPerSecond: Int
        var collapseRepeats: Bool
        var batchEvents: Bool
    }

    let tenant: String
    private let settings: FanoutSettings
    private let hub: FeedHub
    private let reader: EventLogReader
    private let logger: Logger
    private let outbox: StreamOutbox
    private let state: Mutex<State>
    private let heartbeats: Heartbeats

    init(tenant: String, settings: FanoutSettings, hub: FeedHub, reader: EventLogReader, heartbeats: Heartbeats, logger: Logger) {
        self.tenant = tenant
        self.settings = settings
        self.hub = hub
        self.reader = reader
        self.heartbeats = heartbeats
        self.logger = logger
        self.outbox = StreamOutbox(maxEvents: settings.queueEvents, maxBytes: settings.queueBytes)
        self.state = Mutex(State(eventsPerSecond: settings.defaultEventsPerSecond))
    }

    // MARK: FeedListener

    func offer(_ event: FeedEvent) {
        self.outbox.offer(event)
    }

    func offerGap(from: Int64, to: Int64) {
        self.outbox.offerGap(from: from, to: to)
    }

    func feedEnded() {
        self.close(.unexpectedServerError, "the live feed ended; reconnect and resume")
    }

    // MARK: Running

    /// Runs the connection until the client leaves or breaks the protocol.
    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        FanoutMetrics.connections.increment(by: 1)
        defer { FanoutMetrics.connections.decrement(by: 1) }
        self.heartbeats.add(self)
        defer {
            self.state.withLock { $0.done = true }
            self.heartbeats.remove(self)
        }
        // The writer runs in this task and the reader in one child (a task is memory per
        // connection): the reader ending closes the outbox, which ends the writer; the writer
        // ending (closed by the heartbeat, a failed write) cancels the reader.
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await self.readLoop(inbound)
                self.outbox.close()
            }
            await self.writeLoop(outbound)
            self.outbox.close()
            group.cancelAll()
        }
        // Off the feed before closing: a close frame to a stalled socket can take a while.
        if let feed = self.state.withLock({ state -> TenantFeed? in
            defer { state.feed = nil }
            return state.feed
        }) {
            feed.leave(self)
            self.hub.release(feed)
        }
        let reason = self.state.withLock { $0.closeReason }
        if let (code, text) = reason {
            try? await outbound.close(code, reason: text)
        }
    }

    private func close(_ code: WebSocketErrorCode, _ reason: String) {
        self.state.withLock { state in
            if state.closeReason == nil { state.closeReason = (code, reason) }
        }
        self.outbox.close()
    }

    private var isClosing: Bool { self.state.withLock { $0.closeReason != nil } }

    // MARK: Reading

    private func readLoop(_ inbound: WebSocketInboundStream) async {
        var window = ContinuousClock.now
        var count = 0
        var errors = 0
        do {
            for try await message in inbound.messages(maxSize: self.settings.maxMessageBytes) {
                if self.isClosing { return }
                self.state.withLock { $0.lastHeardFrom = .now }
                let now = ContinuousClock.now
                if now - window > .seconds(10) {
                    window = now
                    count = 0
                }
                count += 1
                guard count <= self.settings.maxMessagesPer10Seconds else {
                    self.close(.policyViolation, "more than \(self.settings.maxMessagesPer10Seconds) messages in 10 s")
                    return
                }
                guard case .text(let text) = message else {
                    self.outbox.send(ServerMessage.error(.invalidRequest, "protocol 1 messages are JSON text frames", requestID: nil))
                    errors += 1
                    if errors >= 10 { self.close(.policyViolation, "too many invalid messages"); return }
                    continue
                }
                if await !self.handle(text) {
                    errors += 1
                    if errors >= 10 { self.close(.policyViolation, "too many invalid messages"); return }
                }
            }
        } catch {
            // Too large a message, or the connection went away.
            self.logger.debug("stream connection read ended", metadata: ["error": "\(String(reflecting: error))"])
            if "\(error)".contains("messageTooLarge") || "\(error)".contains("close(WSCore.WebSocketErrorCode.messageTooLarge)") {
                self.close(.messageTooLarge, "messages are at most \(self.settings.maxMessageBytes) bytes")
            }
        }
    }

    /// Handles one client message; false when it was invalid (an error was sent).
    private func handle(_ text: String) async -> Bool {
        let message: ClientMessage
        do {
            message = try JSONDecoder().decode(ClientMessage.self, from: Data(text.utf8))
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
                self.outbox.send(ServerMessage.error(.invalidRequest, "throttle needs maxEventsPerSecond in 1...\(self.settings.maxEventsPerSecond)", requestID: message.requestId))
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

    private func subscribe(_ message: ClientMessage) async -> Bool {
        let filter: StreamFilter
        do {
            filter = try Self.filter(message.filters)
        } catch {
            self.outbox.send(ServerMessage.error(.invalidRequest, error.message, requestID: message.requestId))
            return false
        }
        var askedRate = self.state.withLock { $0.eventsPerSecond }
        if let asked = message.maxEventsPerSecond {
            guard (1...self.settings.maxEventsPerSecond).contains(asked) else {
                self.outbox.send(ServerMessage.error(.invalidRequest, "maxEventsPerSecond must be in 1...\(self.settings.maxEventsPerSecond)", requestID: message.requestId))
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
        let lastEventID = message.lastEventId?.seq
        let requestID = message.requestId
        do {
            _ = try await feed.join(self) { head in
                let from = min(lastEventID ?? head, head)
                self.state.withLock { state in
                    state.subscribed = true
                    state.requestID = requestID
                    state.filter = filter
                    state.eventsPerSecond = rate
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
            feed.leave(self)
            self.state.withLock { $0.feed = nil }
            self.hub.release(feed)
            self.outbox.send(ServerMessage.error(.serviceUnavailable, "the event log is unavailable; retry", requestID: message.requestId))
            return true
        }
        self.outbox.send(ByteBuffer())  // wakes the writer for the resume
        return true
    }

    private func unsubscribe() {
        self.state.withLock { state in
            state.subscribed = false
            state.resume = nil
        }
        self.outbox.subscribe(nil, head: 0, generation: self.outbox.nextGeneration())
    }

    struct FilterError: Error {
        var message: String
    }

    static func filter(_ filters: ClientMessage.Filters?) throws(FilterError) -> StreamFilter {
        guard let filters else { return .everything }
        var filter = StreamFilter()
        for (name, ids) in [("swarmIds", filters.swarmIds), ("agentIds", filters.agentIds)] {
            guard let ids else { continue }
            guard ids.count <= 1000 else { throw FilterError(message: "\(name) takes at most 1000 ids") }
            guard ids.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 256 }) else { throw FilterError(message: "\(name) must be ids of 1 to 256 bytes") }
        }
        filter.swarmIDs = filters.swarmIds.map(Set.init)
        filter.agentIDs = filters.agentIds.map(Set.init)
        if let name = filters.severityGte {
            guard let severity = BusSeverity(name: name) else { throw FilterError(message: "severityGte must be trace, debug, info, warn, error or fatal") }
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

    // MARK: Writing

    /// Writes the outbox to the socket: protocol messages first, then events; replays from the
    /// log where the live queue cannot account for a seq range; applies the rate cap.
    private func writeLoop(_ outbound: WebSocketOutboundWriter) async {
        var cursor: Int64 = 0  // everything the client should have up to here was sent or announced
        var generation = 0
        var filter = StreamFilter.everything
        var limiter = RateLimiter(perSecond: self.settings.defaultEventsPerSecond)
        var skipped: (from: Int64, to: Int64)?
        var collapse = Collapser(enabled: false)

        func takeResume(_ wanted: Int? = nil) -> Resume? {
            self.state.withLock { state in
                guard let resume = state.resume, wanted == nil || resume.generation == wanted else { return nil }
                state.resume = nil
                return resume
            }
        }
        func apply(_ resume: Resume) async throws {
            // What the old subscription collapsed is announced before the new one starts.
            for notice in collapse.flush(olderThan: .zero) { try await self.write(notice, outbound) }
            generation = resume.generation
            filter = resume.filter
            skipped = nil
            collapse = Collapser(enabled: resume.collapseRepeats)
            try await self.flush(outbound)
            self.batch.withLock { $0.enabled = resume.batchEvents }
            limiter = RateLimiter(perSecond: resume.eventsPerSecond)
            try await self.write(resume.acknowledgement, outbound)
            cursor = try await self.replay(after: resume.from, through: resume.head, filter: filter, outbound: outbound, checkRetention: true)
        }
        func current(_ itemGeneration: Int) async throws -> Bool {
            if itemGeneration == generation { return true }
            guard let resume = takeResume(itemGeneration) else { return false }  // an ended subscription's
            try await apply(resume)
            return true
        }

        do {
            while true {
                if let resume = takeResume() {
                    try await apply(resume)
                    continue
                }
                if let range = skipped, self.outbox.isIdle {
                    // The end of a burst over the cap: say what was skipped now, not later.
                    FanoutMetrics.gapNotices.increment()
                    try await self.write(ServerMessage.gap(from: range.from, to: range.to, reason: "rate_limit"), outbound)
                    skipped = nil
                }
                // Collapsed lines are counted until the agent says something else, or for a
                // second at most (the heartbeat ticks the writer while some are pending).
                self.state.withLock { $0.collapsePending = collapse.hasPending }
                let item: OutboxItem
                if let ready = self.outbox.poll() {
                    item = ready
                } else {
                    try await self.flush(outbound)  // nothing more to add: send what is batched
                    item = await self.outbox.next()
                }
                limiter.perSecond = self.state.withLock { $0.eventsPerSecond }
                switch item {
                case .closed:
                    return
                case .control(let message):
                    if message.readableBytes > 0 { try await self.write(message, outbound) }
                case .request:
                    continue  // the stream protocol handles its messages in the reader
                case .tick:
                    for notice in collapse.flush(olderThan: .seconds(1)) { try await self.write(notice, outbound) }
                case .catchUp(let itemGeneration):
                    guard try await current(itemGeneration) else { continue }
                    FanoutMetrics.catchUps.increment()
                    let through = self.outbox.caughtUp()
                    if through - cursor > Int64(self.settings.maxCatchUpEvents) {
                        FanoutMetrics.gapNotices.increment()
                        try await self.write(ServerMessage.gap(from: cursor + 1, to: through, reason: "slow_consumer"), outbound)
                        cursor = through
                    } else if through > cursor {
                        cursor = try await self.replay(after: cursor, through: through, filter: filter, outbound: outbound)
                    }
                case .gap(let from, let to, let itemGeneration):
                    guard try await current(itemGeneration), to > cursor else { continue }
                    FanoutMetrics.gapNotices.increment()
                    try await self.write(ServerMessage.gap(from: max(from, cursor + 1), to: to, reason: "unavailable"), outbound)
                    cursor = to
                case .event(let event, let after, let itemGeneration):
                    guard try await current(itemGeneration), event.seq > cursor else { continue }
                    if after > cursor {
                        cursor = try await self.replay(after: cursor, through: after, filter: filter, outbound: outbound)
                    }
                    if collapse.isDue(.seconds(1)) {
                        for notice in collapse.flush(olderThan: .seconds(1)) { try await self.write(notice, outbound) }
                    }
                    switch collapse.admit(event) {
                    case .suppress:
                        cursor = event.seq
                        continue
                    case .send(let notice):
                        if let notice { try await self.write(notice, outbound) }
                    }
                    if limiter.take() {
                        if let range = skipped {
                            FanoutMetrics.gapNotices.increment()
                            try await self.write(ServerMessage.gap(from: range.from, to: range.to, reason: "rate_limit"), outbound)
                            skipped = nil
                        }
                        try await self.writeEvent(event.frame, outbound)
                        FanoutMetrics.delivered.increment()
                    } else {
                        skipped = (skipped?.from ?? event.seq, event.seq)
                    }
                    cursor = event.seq
                }
            }
        } catch {
            self.logger.debug("stream connection write ended", metadata: ["error": "\(String(reflecting: error))"])
            self.close(.goingAway, "write failed")
        }
    }

    /// Sends the events of `(after, through]` from the log that match `filter`, and returns
    /// `through`. The rate cap does not apply: the client asked for them. With
    /// `checkRetention`, seqs already dropped by the log's retention are announced as a gap.
    private func replay(after: Int64, through: Int64, filter: StreamFilter, outbound: WebSocketOutboundWriter, checkRetention: Bool = false) async throws -> Int64 {
        var cursor = after
        do {
            if checkRetention, after < through {
                let oldest = try await self.reader.oldest(tenant: self.tenant) ?? (through + 1)
                if oldest > after + 1 {
                    FanoutMetrics.gapNotices.increment()
                    try await self.write(ServerMessage.gap(from: after + 1, to: min(oldest - 1, through), reason: "expired"), outbound)
                    cursor = min(oldest - 1, through)
                }
            }
            while cursor < through {
                let page = try await self.reader.events(tenant: self.tenant, after: cursor, through: through, filter: filter, limit: 1000)
                for event in page {
                    try await self.writeEvent(event.frame, outbound)
                }
                FanoutMetrics.caughtUp.increment(by: page.count)
                guard page.count == 1000, let last = page.last else { break }
                cursor = last.seq
            }
        } catch let error as PSQLError {
            self.logger.warning("replay from the event log failed", metadata: ["error": "\(String(reflecting: error))"])
            FanoutMetrics.gapNotices.increment()
            try await self.write(ServerMessage.gap(from: cursor + 1, to: through, reason: "unavailable"), outbound)
        }
        return through
    }

    /// Events waiting to go out together (with `batchEvents`): a JSON array in one message.
    private struct Batch {
        var enabled = false
        var frames: [ByteBuffer] = []
        var bytes = 0
    }

    private let batch = Mutex(Batch())

    /// Writes an event frame, or adds it to the batch (sent when full, when the writer has
    /// nothing more at hand, or before any other message, so the order is kept).
    private func writeEvent(_ frame: ByteBuffer, _ outbound: WebSocketOutboundWriter) async throws {
        let full: Bool? = self.batch.withLock { batch in
            guard batch.enabled else { return nil }
            batch.frames.append(frame)
            batch.bytes += frame.readableBytes
            return batch.frames.count >= 256 || batch.bytes >= 64 << 10
        }
        switch full {
        case nil: try await self.send(frame, outbound)
        case true?: try await self.flush(outbound)
        case false?: break
        }
    }

    /// Sends the batched events: one alone as itself, several as a JSON array.
    private func flush(_ outbound: WebSocketOutboundWriter) async throws {
        let frames: [ByteBuffer] = self.batch.withLock { batch in
            defer {
                batch.frames.removeAll(keepingCapacity: true)
                batch.bytes = 0
            }
            return batch.frames
        }
        guard !frames.isEmpty else { return }
        if frames.count == 1 {
            try await self.send(frames[0], outbound)
            return
        }
        var message = ByteBuffer()
        message.reserveCapacity(frames.reduce(frames.count + 1) { $0 + $1.readableBytes })
        message.writeString("[")
        for (index, frame) in frames.enumerated() {
            if index > 0 { message.writeString(",") }
            message.writeImmutableBuffer(frame)
        }
        message.writeString("]")
        try await self.send(message, outbound)
    }

    /// Writes a protocol message, after whatever events are batched.
    private func write(_ buffer: ByteBuffer, _ outbound: WebSocketOutboundWriter) async throws {
        try await self.flush(outbound)
        try await self.send(buffer, outbound)
    }

    private func send(_ buffer: ByteBuffer, _ outbound: WebSocketOutboundWriter) async throws {
        self.state.withLock { state in
            state.writing = true
            state.lastWrite = .now
        }
        try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: buffer)))
        self.state.withLock { state in
            state.writing = false
            state.lastWrite = .now
        }
    }

    // MARK: Heartbeats

    /// Pings every `fanout.ping-seconds` and closes a connection that has let two pings go
    /// unanswered for a full interval (any client message counts as an answer), or whose socket
    /// has accepted nothing for `fanout.stalled-seconds`; ticks the writer while it holds
    /// collapsed lines. Called by the replica's ``Heartbeats``.
    func heartbeat(now: ContinuousClock.Instant) -> Bool {
        let interval = Duration.seconds(self.settings.pingSeconds)
        enum Action {
            case none, ping, close(WebSocketErrorCode, String)
        }
        let (action, collapsePending, done): (Action, Bool, Bool) = self.state.withLock { state in
            guard !state.done, state.closeReason == nil else { return (.none, false, true) }
            if state.writing, now - state.lastWrite > .seconds(self.settings.stalledSeconds) {
                return (.close(.policyViolation, "the connection accepted nothing for \(self.settings.stalledSeconds) s"), false, false)
            }
            if state.lastHeardFrom > state.lastHeardSeen {
                state.lastHeardSeen = state.lastHeardFrom
                state.pingedAfterHearing = 0
            }
            guard now - state.lastPing >= interval else { return (.none, state.collapsePending, false) }
            if state.pingedAfterHearing >= 2 { return (.close(.goingAway, "no answer to two pings"), false, false) }
            state.lastPing = now
            state.pingedAfterHearing += 1
            return (.ping, state.collapsePending, false)
        }
        if done { return false }
        if collapsePending { self.outbox.tick() }
        switch action {
        case .none: break
        case .ping: self.outbox.send(ServerMessage.ping(now: Date()))
        case .close(let code, let reason):
            self.close(code, reason)
            return false
        }
        return true
    }
}

/// Collapses an agent's consecutive identical log lines (same message text) into one
/// `suppressed` notice with their count, sent when the agent says something else or a second
/// after the first suppressed line.
struct Collapser {
    enum Decision {
        case suppress
        /// Send the event, after this notice of what was suppressed before it (if any).
        case send(ByteBuffer?)
    }

    private struct Agent {
        var key: Int
        var swarmID: String
        var suppressed = 0
        var from: Int64 = 0
        var to: Int64 = 0
        var since = ContinuousClock.now
    }

    private struct AgentKey: Hashable {
        var swarmID: String
        var agentID: String
    }

    let enabled: Bool
    private var agents: [AgentKey: Agent] = [:]
    /// Agents with suppressed lines not yet announced.
    private var pending = 0
    private var oldestPending: ContinuousClock.Instant?

    init(enabled: Bool) {
        self.enabled = enabled
    }

    var hasPending: Bool { self.pending > 0 }

    /// Whether some suppressed lines have waited `age` already.
    func isDue(_ age: Duration) -> Bool {
        self.oldestPending.map { ContinuousClock.now - $0 >= age } ?? false
    }

    mutating func admit(_ event: FeedEvent) -> Decision {
        guard self.enabled, event.kind == .log else { return .send(nil) }
        let id = AgentKey(swarmID: event.swarmID, agentID: event.agentID)
        if var agent = self.agents[id], agent.key == event.repeatKey, event.repeatKey != 0 {
            if agent.suppressed == 0 {
                agent.from = event.seq
                agent.since = .now
                self.pending += 1
                if self.oldestPending == nil { self.oldestPending = agent.since }
            }
            agent.suppressed += 1
            agent.to = event.seq
            self.agents[id] = agent
            return .suppress
        }
        var notice: ByteBuffer?
        if let agent = self.agents[id], agent.suppressed > 0 {
            notice = Self.notice(id, agent)
            self.pending -= 1
        }
        // Bounded: past 10,000 agents start over (those with pending lines are kept).
        if self.agents.count >= 10_000 && self.agents[id] == nil { self.agents = self.agents.filter { $0.value.suppressed > 0 } }
        self.agents[id] = Agent(key: event.repeatKey, swarmID: event.swarmID)
        if self.pending == 0 { self.oldestPending = nil }
        return .send(notice)
    }

    /// Notices for the agents whose suppressed lines began at least `age` ago; their counts
    /// start again.
    mutating func flush(olderThan age: Duration) -> [ByteBuffer] {
        guard self.pending > 0 else { return [] }
        var notices: [ByteBuffer] = []
        let now = ContinuousClock.now
        var oldest: ContinuousClock.Instant?
        for (id, agent) in self.agents where agent.suppressed > 0 {
            if now - agent.since >= age {
                notices.append(Self.notice(id, agent))
                self.agents[id]?.suppressed = 0
                self.pending -= 1
            } else {
                oldest = min(oldest ?? agent.since, agent.since)
            }
        }
        self.oldestPending = oldest
        return notices
    }

    private static func notice(_ id: AgentKey, _ agent: Agent) -> ByteBuffer {
        FanoutMetrics.suppressed.increment(by: agent.suppressed)
        return ServerMessage.suppressed(swarmID: id.swarmID, agentID: id.agentID, count: agent.suppressed, from: agent.from, to: agent.to)
    }
}

/// A token bucket of `perSecond` tokens, as deep as one second of them.
struct RateLimiter {
    var perSecond: Int
    private var tokens: Double
    private var last = ContinuousClock.now

    init(perSecond: Int) {
        self.perSecond = perSecond
        self.tokens = Double(perSecond)
    }

    mutating func take() -> Bool {
        let now = ContinuousClock.now
        self.tokens = min(Double(self.perSecond), self.tokens + (now - self.last).secondsValue * Double(self.perSecond))
        self.last = now
        guard self.tokens >= 1 else { return false }
        self.tokens -= 1
        return true
    }
}

extension Duration {
    var secondsValue: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

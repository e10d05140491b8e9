import Contracts
import Foundation
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import ServiceKit
import Synchronization

/// One `/v1/stream` connection speaking protocol 1 (docs/stream-protocol.md): reads client
/// messages, keeps one subscription, and writes its events, replayed from the log and then
/// live, in seq order without gaps or repeats (or with an explicit `gap` notice).
final class StreamSession: FeedListener, Sendable {
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
    }

    private struct Resume {
        var from: Int64
        var head: Int64
        var acknowledgement: ByteBuffer
        var generation: Int
    }

    let tenant: String
    private let settings: FanoutSettings
    private let hub: FeedHub
    private let reader: EventLogReader
    private let logger: Logger
    private let outbox: StreamOutbox
    private let state: Mutex<State>

    init(tenant: String, settings: FanoutSettings, hub: FeedHub, reader: EventLogReader, logger: Logger) {
        self.tenant = tenant
        self.settings = settings
        self.hub = hub
        self.reader = reader
        self.logger = logger
        self.outbox = StreamOutbox(maxEvents: settings.queueEvents, maxBytes: settings.queueBytes)
        self.state = Mutex(State(eventsPerSecond: settings.defaultEventsPerSecond))
    }

    // MARK: FeedListener

    func offer(_ event: FeedEvent) {
        self.outbox.offer(event)
    }

    func offerGap(from: Int64, to: Int64) {
        FanoutMetrics.gapNotices.increment()
        self.outbox.send(ServerMessage.gap(from: from, to: to, reason: "unavailable"))
    }

    // MARK: Running

    /// Runs the connection until the client leaves or breaks the protocol.
    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        FanoutMetrics.connections.increment(by: 1)
        defer {
            FanoutMetrics.connections.decrement(by: 1)
            if let feed = self.state.withLock({ $0.feed }) {
                feed.leave(self)
                self.hub.release(feed)
            }
        }
        // Whichever ends first (the client leaves or breaks the protocol, a write fails, the
        // watchdog gives up) ends the others.
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.readLoop(inbound) }
            group.addTask { await self.writeLoop(outbound) }
            group.addTask { await self.watchdog() }
            await group.next()
            self.outbox.close()
            group.cancelAll()
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
            self.outbox.send(ServerMessage.error(.invalidRequest, "not a protocol 1 message: \(Self.describe(error))", requestID: nil))
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
        var rate = self.state.withLock { $0.eventsPerSecond }
        if let asked = message.maxEventsPerSecond {
            guard (1...self.settings.maxEventsPerSecond).contains(asked) else {
                self.outbox.send(ServerMessage.error(.invalidRequest, "maxEventsPerSecond must be in 1...\(self.settings.maxEventsPerSecond)", requestID: message.requestId))
                return false
            }
            rate = asked
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
        let head: Int64
        do {
            head = try await feed.join(self)
        } catch {
            // Let go of a feed that could not start, so the next subscribe starts a new one.
            feed.leave(self)
            self.state.withLock { $0.feed = nil }
            self.hub.release(feed)
            self.outbox.send(ServerMessage.error(.serviceUnavailable, "the event log is unavailable; retry", requestID: message.requestId))
            return true
        }
        // Without lastEventId the stream starts at the head: live events only.
        let from = min(message.lastEventId?.seq ?? head, head)
        let acknowledgement = ServerMessage.subscribed(requestID: message.requestId, from: from + 1, head: head, maxEventsPerSecond: rate)
        // The resume is recorded before the outbox starts the new generation, so the writer
        // that sees one of its events finds the resume to apply first.
        let generation = self.outbox.nextGeneration()
        self.state.withLock { state in
            state.subscribed = true
            state.requestID = message.requestId
            state.filter = filter
            state.eventsPerSecond = rate
            state.resume = Resume(from: from, head: head, acknowledgement: acknowledgement, generation: generation)
        }
        self.outbox.subscribe(filter, head: head, generation: generation)
        self.outbox.send(ByteBuffer())  // wakes the writer
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

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "\(key.stringValue) is required"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        case DecodingError.dataCorrupted(let context):
            context.codingPath.isEmpty ? "malformed JSON" : context.debugDescription
        default: "malformed JSON"
        }
    }

    // MARK: Writing

    /// Writes the outbox to the socket: protocol messages first, then events; replays from the
    /// log where the live queue cannot account for a seq range; applies the rate cap.
    private func writeLoop(_ outbound: WebSocketOutboundWriter) async {
        var cursor: Int64 = 0  // everything the client should have up to here was written
        var generation = 0
        var limiter = RateLimiter(perSecond: self.settings.defaultEventsPerSecond)
        var skipped: (from: Int64, to: Int64)?
        do {
            while true {
                // A new subscription: acknowledge it, then replay what the client missed up to
                // the head it joined at.
                if let resume = self.state.withLock({ state -> Resume? in
                    guard let resume = state.resume else { return nil }
                    state.resume = nil
                    return resume
                }) {
                    generation = resume.generation
                    skipped = nil
                    limiter = RateLimiter(perSecond: self.state.withLock { $0.eventsPerSecond })
                    try await self.write(resume.acknowledgement, outbound)
                    cursor = try await self.replay(after: resume.from, through: resume.head, outbound: outbound)
                    continue
                }
                let item = await self.outbox.next()
                let (rate, filter) = self.state.withLock { ($0.eventsPerSecond, $0.filter) }
                limiter.perSecond = rate
                switch item {
                case .closed:
                    return
                case .control(let message):
                    if message.readableBytes > 0 { try await self.write(message, outbound) }
                case .catchUp:
                    guard let feed = self.state.withLock({ $0.feed }), let head = feed.head else { continue }
                    self.outbox.caughtUp(through: head)
                    if head - cursor > Int64(self.settings.maxCatchUpEvents) {
                        FanoutMetrics.gapNotices.increment()
                        try await self.write(ServerMessage.gap(from: cursor + 1, to: head, reason: "slow_consumer"), outbound)
                        cursor = head
                    } else {
                        cursor = try await self.replay(after: cursor, through: head, outbound: outbound, filter: filter)
                    }
                case .event(let event, let after, let eventGeneration):
                    if eventGeneration != generation {
                        // Queued for a subscription whose resume is still to be applied; put
                        // back by replaying through it once the resume is done.
                        if let resume = self.state.withLock({ state -> Resume? in
                            guard let resume = state.resume, resume.generation == eventGeneration else { return nil }
                            state.resume = nil
                            return resume
                        }) {
                            generation = resume.generation
                            skipped = nil
                            try await self.write(resume.acknowledgement, outbound)
                            cursor = try await self.replay(after: resume.from, through: resume.head, outbound: outbound)
                        } else {
                            continue  // from a subscription that has ended
                        }
                    }
                    if event.seq <= cursor { continue }
                    if after > cursor {
                        cursor = try await self.replay(after: cursor, through: after, outbound: outbound, filter: filter)
                    }
                    if limiter.take() {
                        if let range = skipped {
                            FanoutMetrics.gapNotices.increment()
                            try await self.write(ServerMessage.gap(from: range.from, to: range.to, reason: "rate_limit"), outbound)
                            skipped = nil
                        }
                        try await self.write(event.frame, outbound)
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

    /// Sends the events of `(after, through]` from the log (matching the filter) and returns
    /// `through`. The rate cap does not apply: the client asked for them.
    private func replay(after: Int64, through: Int64, outbound: WebSocketOutboundWriter, filter: StreamFilter? = nil) async throws -> Int64 {
        let filter = filter ?? self.state.withLock { $0.filter }
        var cursor = after
        while cursor < through {
            let page: [FeedEvent]
            do {
                page = try await self.reader.events(tenant: self.tenant, after: cursor, through: through, filter: filter, limit: 1000)
            } catch {
                FanoutMetrics.gapNotices.increment()
                try await self.write(ServerMessage.gap(from: cursor + 1, to: through, reason: "unavailable"), outbound)
                return through
            }
            for event in page {
                try await self.write(event.frame, outbound)
            }
            FanoutMetrics.caughtUp.increment(by: page.count)
            if page.count < 1000 { break }
            cursor = page.last!.seq
        }
        return through
    }

    private func write(_ buffer: ByteBuffer, _ outbound: WebSocketOutboundWriter) async throws {
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
    /// has accepted nothing for `fanout.stalled-seconds`.
    private func watchdog() async {
        let interval = Duration.seconds(self.settings.pingSeconds)
        var lastPing = ContinuousClock.now
        var pingedAfterHearing = 0
        var lastHeard = ContinuousClock.now
        while !Task.isCancelled {
            try? await Task.sleep(for: min(interval, .milliseconds(250)))
            if Task.isCancelled { return }
            let now = ContinuousClock.now
            let (heard, writing, lastWrite) = self.state.withLock { ($0.lastHeardFrom, $0.writing, $0.lastWrite) }
            if writing, now - lastWrite > .seconds(self.settings.stalledSeconds) {
                self.close(.policyViolation, "the connection accepted nothing for \(self.settings.stalledSeconds) s")
                return
            }
            if heard > lastHeard {
                lastHeard = heard
                pingedAfterHearing = 0
            }
            guard now - lastPing >= interval else { continue }
            if pingedAfterHearing >= 2 {
                self.close(.goingAway, "no answer to two pings")
                return
            }
            lastPing = now
            pingedAfterHearing += 1
            self.outbox.send(ServerMessage.ping(now: Date()))
        }
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

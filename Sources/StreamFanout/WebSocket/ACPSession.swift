import Contracts
import EventLog
import Foundation
import Logging
import NIOCore
import NIOWebSocket
import PostgresNIO
import ServiceKit
import Synchronization

/// One `/v1/acp` connection: the ACP cache methods of seed 003 as JSON-RPC 2.0
/// (docs/stream-protocol.md, "ACP cache"), and the ACP frames a person sends to agents
/// (``ACPFrameRelay``). Envelopes are sent bare, exactly as stored.
///
/// A connector (an agent session token) reads its own agent's threads here, and nothing else.
///
/// Everything a connection does happens in its writer, in order: requests (replays, fetches,
/// acks) and live envelopes, so a replay and the live tail of a thread meet at its cursor
/// without a gap or a repeat.
final class ACPSession: FeedListener, WebSocketIdleWriter, Sendable {
    static let maxThreads = 100
    static let maxFetch = 1000

    let tenant: String
    /// The access token's subject: acknowledgements are kept per device.
    let device: String
    private let identity: AccessIdentity
    private let relay: ACPFrameRelay
    private let settings: FanoutSettings
    private let hub: FeedHub
    private let cache: ACPCache
    private let logger: Logger
    private let outbox: StreamOutbox
    private let feed = Mutex<TenantFeed?>(nil)
    private let connection: WebSocketConnection
    private let writerMemory = WriterMemory()
    /// Where the threads this connection follows live are announced (for the notifier).
    private let presence: ACPPresenceBoard
    private let connectionID = UUID().uuidString
    /// The socket's event loop, where the feed offers its events.
    let eventLoop: any EventLoop

    init(
        identity: AccessIdentity,
        eventLoop: any EventLoop,
        settings: FanoutSettings,
        hub: FeedHub,
        cache: ACPCache,
        presence: ACPPresenceBoard,
        relay: ACPFrameRelay,
        heartbeats: WebSocketHeartbeats,
        logger: Logger
    ) {
        self.tenant = identity.tenant
        self.eventLoop = eventLoop
        self.device = identity.subject
        self.identity = identity
        self.relay = relay
        self.presence = presence
        self.settings = settings
        self.hub = hub
        self.cache = cache
        self.logger = logger
        self.outbox = StreamOutbox(maxEvents: settings.queueEvents, maxBytes: settings.queueBytes)
        self.connection = WebSocketConnection(
            limits: settings.webSocketLimits(liveness: .pingFrames),
            heartbeats: heartbeats,
            identity: identity,
            logger: logger
        )
    }

    func offer(_ events: [FeedEvent]) { self.outbox.offer(events) }
    func offerGap(from: Int64, to: Int64) {}  // each thread's cursor finds its own gaps
    func feedEnded() { self.connection.close(.unexpectedServerError, "the live feed ended; reconnect and resubscribe") }

    // MARK: The connection

    /// Serves the connection, holding no task while there is nothing to write; `whenDone` runs
    /// once it has ended.
    func start(on socket: UpgradedWebSocket, whenDone: @escaping @Sendable () -> Void) {
        self.connection.start(on: socket, handler: self, whenDone: whenDone)
    }

    /// Requests go to the writer, which handles them in order with the live envelopes.
    func received(_ message: WebSocketClientMessage, on connection: WebSocketConnection) async -> Bool {
        guard case .text(let text) = message else {
            self.outbox.send(Self.error(id: nil, -32600, "JSON-RPC messages are text frames"))
            return false
        }
        self.outbox.forward(text)
        return true
    }

    func stop() {
        self.outbox.close()
    }

    /// A WebSocket ping frame: seed 003's client answers with the system's pongs.
    func ping() {
        self.outbox.ping()
    }

    func finish() async {
        self.presence.remove(connection: self.connectionID)
        if let feed = self.feed.withLock({ feed -> TenantFeed? in
            defer { feed = nil }
            return feed
        }) {
            self.hub.release(feed, leaving: self)
        }
    }

    /// The threads followed live now, for the notifier (a person's: a connector reading its
    /// thread is no one watching).
    private func announce(_ cursors: [String: Int64]) {
        guard self.identity.agentSession == nil else { return }
        self.presence.update(connection: self.connectionID, tenant: self.tenant, device: self.device, threads: Set(cursors.keys))
    }

    // MARK: Writing

    /// The writer's state between its runs (one run at a time): the live threads and the last
    /// per-thread seq sent of each, and the thread of frames that name none (the last
    /// subscribed, or `acp.cache.bind`).
    final class WriterMemory: @unchecked Sendable {
        var cursors: [String: Int64] = [:]
        var bound: String?
    }

    func sleep(until wake: @escaping @Sendable () -> Void) -> Bool {
        self.outbox.sleep(until: wake)
    }

    /// Writes what the outbox has ready (taken under one lock, up to 256 items at a time):
    /// true when nothing more is ready, false once the outbox is closed or the connection is
    /// closing.
    func writeReady(to writer: WebSocketFrameWriter) async throws -> Bool {
        let memory = self.writerMemory
        var cursors = memory.cursors
        var bound = memory.bound
        defer {
            memory.cursors = cursors
            memory.bound = bound
        }
        var ready: [OutboxItem] = []
        while true {
            ready.removeAll(keepingCapacity: true)
            self.outbox.drain(into: &ready, limit: StreamSession.itemsPerBatch)
            if ready.isEmpty { return true }
            for item in ready {
                switch item {
                case .closed:
                    return false
                case .control(let message):
                    try await writer.send(message)
                case .ping:
                    try await writer.ping()
                case .request(let text):
                    // What is written so far goes out before the cache or the feed is asked.
                    writer.endBatch()
                    if try await !self.handle(text, cursors: &cursors, bound: &bound, writer: writer) {
                        self.connection.countInvalid()
                        if self.connection.isClosing { return false }
                    }
                case .event(let event, _, _):
                    guard event.kind == .acp, let cursor = cursors[event.threadID], event.threadSeq > cursor else { continue }
                    if event.threadSeq > cursor + 1 {
                        cursors[event.threadID] = try await self.replay(event.threadID, after: cursor, through: event.threadSeq - 1, writer: writer)
                    }
                    if let envelope = event.envelope {
                        try await writer.send(envelope)
                    }
                    cursors[event.threadID] = event.threadSeq
                case .catchUp, .gap:
                    // Dropped from the queue, or not delivered by the feed: every live thread
                    // catches up from the log.
                    if case .catchUp = item { _ = self.outbox.caughtUp() }
                    for (thread, cursor) in cursors {
                        cursors[thread] = try await self.replay(thread, after: cursor, through: .max, writer: writer)
                    }
                case .tick:
                    continue
                }
            }
        }
    }

    /// Sends the thread's envelopes with `after < threadSeq <= through`; returns the last seq
    /// sent (or `after`).
    private func replay(_ thread: String, after: Int64, through: Int64, writer: WebSocketFrameWriter) async throws -> Int64 {
        var cursor = after
        do {
            while cursor < through {
                writer.endBatch()  // what is written goes out before the log is read
                let page = try await self.cache.envelopes(tenant: self.tenant, thread: thread, from: cursor + 1, limit: 500)
                for envelope in page where envelope.threadSeq <= through {
                    try await writer.send(envelope.bytes)
                    cursor = envelope.threadSeq
                }
                // A short page is the end (one cut by bytes is not); a page entirely past `through`
                // (or no progress) too.
                let full = page.count == 500 || page.reduce(0, { $0 + $1.bytes.readableBytes }) >= ACPCache.pageBytes
                guard full, let last = page.last, last.threadSeq <= through, last.threadSeq == cursor else { break }
            }
        } catch let error as PSQLError {
            // The cursor stays where the client is: the next envelope of the thread (or a
            // catch-up) replays the rest.
            self.logger.warning("ACP replay failed", metadata: ["thread": "\(thread)", "error": "\(String(reflecting: error))"])
        }
        return cursor
    }

    // MARK: Requests

    private struct Request: Decodable {
        var jsonrpc: String?
        var id: RequestID?
        var method: String?
        var params: Params?
    }

    /// A JSON-RPC id: a string or a number, echoed as it came.
    enum RequestID: Decodable, Sendable {
        case string(String)
        case number(Int64)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int64.self) {
                self = .number(number)
            } else {
                self = .string(try container.decode(String.self))
            }
        }

        /// The id of a parsed message, when it is one (``JSONRPCID``: a string, or an integer).
        init?(_ value: Any?) {
            guard JSONRPCID.text(value) != nil else { return nil }
            if let text = value as? String {
                self = .string(text)
            } else if let number = value as? NSNumber {
                self = .number(number.int64Value)
            } else {
                return nil
            }
        }

        var json: Any {
            switch self {
            case .string(let text): text
            case .number(let number): number
            }
        }
    }

    private struct Params: Decodable {
        var thread_id: String?
        var from_seq: Int64?
        var live: Bool?
        var limit: Int?
        var seq: Int64?
    }

    private struct InvalidParams: Error {
        var message: String
    }

    /// A thread or method out of this identity's reach.
    private struct Forbidden: Error {
        var message: String
    }

    /// Handles one request; false when it was invalid (an error was answered).
    private func handle(_ text: String, cursors: inout [String: Int64], bound: inout String?, writer: WebSocketFrameWriter) async throws -> Bool {
        if let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], object["jsonrpc"] as? String == "2.0",
            !ACPClientFrame.isCacheMethod(object["method"] as? String)
        {
            // A frame for an agent: appended to its thread.
            try await self.send(text, id: RequestID(object["id"]), isRequest: object["method"] != nil, bound: bound, writer: writer)
            return true
        }
        let request: Request
        do {
            request = try JSONDecoder().decode(Request.self, from: Data(text.utf8))
        } catch is DecodingError {
            let parses = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) != nil
            try await writer.send(Self.error(id: nil, parses ? -32600 : -32700, parses ? "not a JSON-RPC 2.0 request" : "parse error"))
            return false
        }
        guard request.jsonrpc == "2.0" else {
            try await writer.send(Self.error(id: request.id, -32600, "a JSON-RPC 2.0 message carries \"jsonrpc\": \"2.0\""))
            return false
        }
        guard let method = request.method else {
            try await writer.send(Self.error(id: request.id, -32600, "a JSON-RPC 2.0 request needs a method"))
            return false
        }
        let params = request.params ?? Params()
        do {
            switch method {
            case "acp.cache.subscribe":
                let thread = try await self.reachable(try Self.thread(params))
                let from = params.from_seq ?? 1
                guard from >= 1 else { throw InvalidParams(message: "from_seq must be at least 1") }
                guard cursors[thread] != nil || cursors.count < Self.maxThreads else {
                    throw InvalidParams(message: "at most \(Self.maxThreads) live threads per connection")
                }
                let live = params.live ?? true
                if live {
                    try await self.joinFeed()
                    // Queue the thread's envelopes from now on, before the replay reads the log.
                    self.outbox.refilter { $0.threadIDs = Set(cursors.keys).union([thread]) }
                }
                let head = try await self.cache.head(tenant: self.tenant, thread: thread)
                let start = try await self.cache.start(tenant: self.tenant, thread: thread) ?? head + 1
                try await writer.send(
                    Self.result(id: request.id, ["thread_id": thread, "from_seq": from, "head_seq": head, "first_seq": start, "live": live])
                )
                // Where the log now starts, when retention took what was asked for.
                if from < start {
                    try await writer.send(Self.expired(thread: thread, from: from, before: start))
                }
                // Live from here: a replay that stops early is resumed by the next envelope.
                // (The thread joined the queue's filter before the replay: nothing after it is missed.)
                if live {
                    cursors[thread] = from - 1
                } else {
                    cursors[thread] = nil
                }
                self.outbox.refilter { $0.threadIDs = Set(cursors.keys) }
                self.announce(cursors)
                bound = thread
                let sent = try await self.replay(thread, after: from - 1, through: .max, writer: writer)
                if live { cursors[thread] = sent }
            case "acp.cache.unsubscribe":
                let thread = try Self.thread(params)
                cursors[thread] = nil
                self.outbox.refilter { $0.threadIDs = Set(cursors.keys) }
                self.announce(cursors)
                try await writer.send(Self.result(id: request.id, ["thread_id": thread]))
            case "acp.cache.bind":
                let thread = try await self.reachable(try Self.thread(params))
                bound = thread
                try await writer.send(Self.result(id: request.id, ["thread_id": thread]))
            case "acp.cache.fetch":
                let thread = try await self.reachable(try Self.thread(params))
                let from = params.from_seq ?? 1
                let limit = params.limit ?? 100
                guard from >= 1, (1...Self.maxFetch).contains(limit) else {
                    throw InvalidParams(message: "from_seq must be at least 1 and limit 1...\(Self.maxFetch)")
                }
                let envelopes = try await self.cache.envelopes(tenant: self.tenant, thread: thread, from: from, limit: limit)
                let head = try await self.cache.head(tenant: self.tenant, thread: thread)
                let start = try await self.cache.start(tenant: self.tenant, thread: thread) ?? head + 1
                try await writer.send(
                    Self.fetchResult(id: request.id, thread: thread, envelopes: envelopes, head: head, from: from, start: start)
                )
            case "acp.cache.ack":
                try self.personOnly(method)
                let thread = try Self.thread(params)
                guard let seq = params.seq, seq >= 0 else { throw InvalidParams(message: "seq (a non-negative integer) is required") }
                let head = try await self.cache.head(tenant: self.tenant, thread: thread)
                guard seq <= head else { throw InvalidParams(message: "seq \(seq) is past the thread's head \(head)") }
                let acked = try await self.cache.ack(tenant: self.tenant, device: self.device, thread: thread, seq: seq)
                try await writer.send(
                    Self.result(id: request.id, ["thread_id": thread, "acked_seq": acked, "head_seq": head, "unread": max(0, head - acked)])
                )
            case "acp.cache.threads":
                try self.personOnly(method)
                let limit = params.limit ?? 100
                guard (1...Self.maxFetch).contains(limit) else { throw InvalidParams(message: "limit must be 1...\(Self.maxFetch)") }
                let threads = try await self.cache.threads(tenant: self.tenant, device: self.device, limit: limit)
                let list: [[String: Any]] = threads.map {
                    [
                        "thread_id": $0.thread, "head_seq": $0.head, "acked_seq": $0.acked, "unread": $0.unread,
                        "title": $0.summary.title ?? NSNull(), "agent_id": $0.summary.agent ?? NSNull(), "swarm_id": $0.summary.swarm ?? NSNull(),
                    ]
                }
                try await writer.send(Self.result(id: request.id, ["threads": list]))
            default:
                try await writer.send(
                    Self.error(
                        id: request.id,
                        -32601,
                        "no method \(method.prefix(64)); the cache has acp.cache.subscribe, fetch, ack, unsubscribe, threads, bind"
                    )
                )
                return false
            }
        } catch let invalid as InvalidParams {
            try await writer.send(Self.error(id: request.id, -32602, invalid.message))
            return false
        } catch let forbidden as Forbidden {
            try await writer.send(Self.error(id: request.id, -32003, "PermissionDenied: " + forbidden.message, code: .permissionDenied))
        } catch let error as APIError {
            try await writer.send(Self.error(id: request.id, -32000, error.message))
        } catch let error where error is PSQLError || error is PostgresTransactionError {
            // A read fails as PSQLError; a write (the ack, in its transaction) as PostgresTransactionError.
            self.logger.warning("ACP cache request failed", metadata: ["error": "\(String(reflecting: error))"])
            try await writer.send(Self.error(id: request.id, -32000, "the cache is unavailable; retry"))
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            self.logger.warning("ACP cache request failed", metadata: ["error": "\(String(reflecting: error))"])
            try await writer.send(Self.error(id: request.id, -32000, "the live feed is unavailable; retry"))
        }
        return true
    }

    /// Appends a person's frame to its thread (``ACPFrameRelay``) and says so once it is
    /// committed (`acp.cache.sent`), or answers the refusal: as the error of the request `id`,
    /// or with a null id for a result or notification.
    private func send(_ text: String, id: RequestID?, isRequest: Bool, bound: String?, writer: WebSocketFrameWriter) async throws {
        writer.endBatch()
        let sent: ACPFrameRelay.Sent
        do {
            sent = try await self.relay.relay(text, identity: self.identity, bound: bound)
        } catch {
            try await writer.send(
                Self.error(
                    id: isRequest ? id : nil,
                    error.rpcCode,
                    "\(error.code.rawValue): \(error.message)",
                    code: error.code,
                    retryAfterSeconds: error.retryAfterSeconds
                )
            )
            return
        }
        try await writer.send(
            Self.json([
                "jsonrpc": "2.0", "method": "acp.cache.sent",
                "params": [
                    "thread_id": sent.thread, "seq": sent.threadSeq, "msg_id": sent.msgID, "duplicate": sent.duplicate,
                    "id": id?.json ?? NSNull(),
                ],
            ])
        )
    }

    /// `thread`, when this identity may read it: a person, any thread of the tenant; an agent
    /// session, its own agent's only (the agent of the thread's first envelope, which no later
    /// post changes): its connector opens it before it reads it.
    private func reachable(_ thread: String) async throws -> String {
        guard let session = self.identity.agentSession else { return thread }
        let owner = try await self.cache.eventLog.threadAgent(tenant: self.tenant, thread: thread)
        guard let owner, owner.swarm == session.swarm, owner.agent == session.agent else {
            throw Forbidden(message: "thread \(thread.prefix(64)) is not this agent's")
        }
        return thread
    }

    /// Refuses `method` to an agent session: acknowledgements and the thread list are people's.
    private func personOnly(_ method: String) throws(Forbidden) {
        if self.identity.agentSession != nil { throw Forbidden(message: "\(method) is for people's devices, not agent sessions") }
    }

    private static func thread(_ params: Params) throws(InvalidParams) -> String {
        guard let thread = params.thread_id, !thread.isEmpty, thread.utf8.count <= 256 else {
            throw InvalidParams(message: "thread_id (1 to 256 bytes) is required")
        }
        return thread
    }

    /// Joins the tenant's feed once, for ACP envelopes only.
    private func joinFeed() async throws {
        guard self.feed.withLock({ $0 }) == nil else { return }
        let feed = try await self.hub.acquire(tenant: self.tenant)
        self.feed.withLock { $0 = feed }
        let generation = self.outbox.nextGeneration()
        do {
            _ = try await feed.join(self) { head in
                self.outbox.subscribe(StreamFilter(kinds: [.acp], threadIDs: []), head: head, generation: generation)
            }
        } catch {
            self.feed.withLock { $0 = nil }
            self.hub.release(feed, leaving: self)
            throw error
        }
    }

    // MARK: Messages

    private static func result(id: RequestID?, _ result: [String: Any]) -> ByteBuffer {
        Self.json(["jsonrpc": "2.0", "id": id?.json ?? NSNull(), "result": result])
    }

    /// A JSON-RPC error; with `code` (ours), its `data` has `code`, `retryable` and `retry_after`.
    static func error(id: RequestID?, _ rpcCode: Int, _ message: String, code: ErrorCode? = nil, retryAfterSeconds: Int? = nil) -> ByteBuffer {
        var error: [String: Any] = ["code": rpcCode, "message": message]
        if let code {
            var data: [String: Any] = ["code": code.rawValue, "retryable": code.isRetryable]
            if let retryAfterSeconds { data["retry_after"] = retryAfterSeconds }
            error["data"] = data
        }
        return Self.json(["jsonrpc": "2.0", "id": id?.json ?? NSNull(), "error": error])
    }

    /// The fetch result, with the envelopes spliced in as stored (not re-encoded).
    /// `acp.cache.expired`: the thread's envelopes `from…before-1` passed retention.
    private static func expired(thread: String, from: Int64, before start: Int64) -> ByteBuffer {
        Self.json(["jsonrpc": "2.0", "method": "acp.cache.expired", "params": ["thread_id": thread, "from_seq": from, "to_seq": start - 1]])
    }

    private static func fetchResult(
        id: RequestID?,
        thread: String,
        envelopes: [ACPCache.Envelope],
        head: Int64,
        from: Int64,
        start: Int64
    ) -> ByteBuffer {
        var buffer = Self.json(["jsonrpc": "2.0", "id": id?.json ?? NSNull()])
        buffer.moveWriterIndex(to: buffer.writerIndex - 1)  // reopen the object
        let next = (envelopes.last?.threadSeq).map { $0 + 1 } ?? from
        let summary = Self.json(["thread_id": thread, "head_seq": head, "next_seq": next, "first_seq": start])
        buffer.writeString(#","result":"#)
        buffer.writeBytes(summary.readableBytesView.dropLast())
        buffer.writeString(#","envelopes":["#)
        for (index, envelope) in envelopes.enumerated() {
            if index > 0 { buffer.writeString(",") }
            buffer.writeImmutableBuffer(envelope.bytes)
        }
        buffer.writeString("]}}")
        return buffer
    }

    private static func json(_ object: [String: Any]) -> ByteBuffer {
        ByteBuffer(bytes: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8))
    }
}

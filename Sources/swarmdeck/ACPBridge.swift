import AsyncHTTPClient
import Contracts
import Crypto
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import SwarmdeckTools

/// `swarmdeck agent run --acp`: the connector is the ACP client of the agent it runs, over the
/// agent's stdio (newline-delimited JSON-RPC 2.0), and the agent's thread is where people
/// speak to it (docs/agents.md, "ACP agents").
///
/// - At start it sends `initialize` and opens the session: `session/load` of the session it
///   had (the state file) when the agent can load sessions, else `session/new` in the working
///   folder. The thread is the session's id, so it exists before any phone looks.
/// - Every frame both ways is mirrored into the thread through ingest, in order: the agent's
///   as `agent_to_client`, the connector's own as `client_to_agent` (with no origin, so they
///   are never delivered back).
/// - It reads the thread from stream-fanout's `/v1/acp` with its agent session token, from its
///   cursor on, and writes to the agent's stdin, in thread order, each prompt or cancel people
///   sent (origin `client`) and each answer people or approvals (origin `service`) gave to a
///   request of this agent process, named by its seq (``ACPWire/Requests``): the first answer
///   wins. The cursor (the last seq handled) is kept in the state file after each frame
///   written: a connector that restarts on the same session goes on from there.
actor ACPBridge {
    struct Options: Sendable {
        var ingestURL: String
        var streamURL: String
        var key: String
        var swarm: String
        var agent: String
        var workingDirectory: String
        /// Where the session and cursor are kept (nil: nowhere, every start is a new session).
        var stateFile: String?
    }

    /// What the state file holds.
    struct SavedState: Codable, Equatable {
        var swarm: String
        var agent: String
        var session: String
        var thread: String
        var cursor: Int64
    }

    private let options: Options
    private let client: HTTPClient
    private let child: ChildProcess
    private let sessionToken: @Sendable () async throws -> String
    private let run = String(UInt64.random(in: 0..<UInt64.max), radix: 36)
    private var counter = 0
    /// The thread, once the session is open.
    private(set) var thread: String?
    private var session: String?
    /// Frames written before the thread was known, in order.
    private var early: [(body: String, direction: String, msgID: String)] = []
    /// The connector's own requests waiting for the agent's answer, by id.
    private var waiters: [String: CheckedContinuation<ACPWire.Message?, Never>] = [:]
    /// The agent's requests to its client not answered yet.
    private var requests = ACPWire.Requests()
    /// Bytes of `early`, bounded by ``maxEarlyBytes``.
    private var earlyBytes = 0
    static let maxEarlyBytes = 16 << 20
    /// The agent's input queue (``ChildProcess``'s `inputLimit` under `--acp`): above any frame
    /// ingest stores (`ingest.max-acp-body-bytes`, at most 1 MiB) with its newline.
    static let maxInputBytes = 4 << 20
    /// While the agent answers `session/load`: it replays the session's history, which the
    /// thread already holds (not mirrored again).
    private var loading = false
    /// Failed attempts at the thread's channel since it last subscribed.
    private var channelFailures = 0
    /// The last thread seq handled.
    private var cursor: Int64 = 0

    init(options: Options, client: HTTPClient, child: ChildProcess, sessionToken: @escaping @Sendable () async throws -> String) {
        self.options = options
        self.client = client
        self.child = child
        self.sessionToken = sessionToken
    }

    /// Opens the session, then delivers the thread's frames to the agent until cancelled.
    func run() async {
        do {
            try await self.open()
        } catch {
            // An agent nobody can reach is no use running: it is ended (the connector exits).
            AgentConnector.say("ACP: the agent's session did not open (\(error)); ending the agent")
            _ = self.child.signal(SIGTERM)
            return
        }
        AgentConnector.say("ACP: thread \(self.thread ?? "") (session \(self.session ?? "")), delivering from seq \(self.cursor + 1)")
        await self.deliverLoop()
    }

    // MARK: The agent's side

    /// A line the agent wrote on its standard output.
    func fromAgent(_ line: String) async {
        guard let message = ACPWire.message(line) else {
            AgentConnector.say("ACP: the agent wrote a line that is not JSON-RPC 2.0 (\(line.utf8.count) bytes); not mirrored")
            return
        }
        let msgID = self.nextMsgID()
        switch message.kind {
        case .request:
            // Known by the msgId of our own mirror post: a request someone else posts to the
            // thread with the same id is never this agent's.
            if let id = message.id { self.requests.asked(id, msgID: msgID) }
        case .result:
            if let id = message.id, let waiter = self.waiters.removeValue(forKey: id) { waiter.resume(returning: message) }
        case .notification:
            // The history session/load replays is in the thread already.
            if self.loading { return }
        }
        await self.mirror(line, direction: "agent_to_client", msgID: msgID)
    }

    /// The output has ended: nobody will answer the connector's requests.
    func agentEnded() {
        for waiter in self.waiters.values { waiter.resume(returning: nil) }
        self.waiters.removeAll()
    }

    // MARK: Opening

    private func open() async throws {
        let initialize = try await self.request(
            "initialize",
            ["protocolVersion": 1, "clientCapabilities": ["fs": ["readTextFile": false, "writeTextFile": false], "terminal": false]]
        )
        let canLoad = ((initialize["agentCapabilities"] as? [String: Any])?["loadSession"] as? Bool) ?? false
        let folder = ["cwd": self.options.workingDirectory, "mcpServers": [Any]()] as [String: Any]
        var loadedThread: String?
        if canLoad, let saved = self.loadState() {
            var parameters = folder
            parameters["sessionId"] = saved.session
            self.loading = true
            let loaded = try? await self.request("session/load", parameters)
            self.loading = false
            if loaded != nil {
                self.session = saved.session
                loadedThread = saved.thread
                self.cursor = saved.cursor
            }
        }
        if self.session == nil {
            let created = try await self.request("session/new", folder)
            guard let session = created["sessionId"] as? String, !session.isEmpty else {
                throw ChildProcessError("session/new answered no sessionId")
            }
            self.session = session
        }
        // What came before the thread was known goes first, in order; the thread is set only
        // once nothing is left waiting, so a frame that comes meanwhile waits its turn too.
        // They open the thread: each is posted until ingest stores it (a thread nobody opened
        // cannot be read or written).
        let thread = loadedThread ?? Self.thread(for: self.session!)
        while !self.early.isEmpty {
            let batch = self.early
            self.early.removeAll()
            self.earlyBytes = 0
            for frame in batch { await self.post(frame.body, direction: frame.direction, msgID: frame.msgID, thread: thread, untilStored: true) }
        }
        self.thread = thread
        self.saveState()
    }

    /// The thread of a session: its id, when that is an id ingest takes, else a digest of it.
    static func thread(for session: String) -> String {
        if EntityID.problem(session, field: "sessionId") == nil { return session }
        return "acp-" + SHA256.hash(data: Array(session.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    /// Sends the connector's own request and waits (30 s) for its result.
    private func request(_ method: String, _ parameters: [String: Any]) async throws -> [String: Any] {
        self.counter += 1
        let id = "swarmdeck-\(self.run)-\(self.counter)"
        let object: [String: Any] = ["jsonrpc": "2.0", "id": id, "method": method, "params": parameters]
        let line = String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
        let key = ACPWire.idText(id)!
        let timeout = Task {
            try await Task.sleep(for: .seconds(30))
            self.answer(key, nil)
        }
        defer { timeout.cancel() }
        let answer: ACPWire.Message? = await withCheckedContinuation { continuation in
            self.waiters[key] = continuation
            Task {
                await self.mirror(line, direction: "client_to_agent", msgID: self.nextMsgID())
                do {
                    try self.child.send(line: line)
                } catch {
                    self.answer(key, nil)
                }
            }
        }
        guard let answer else { throw ChildProcessError("the agent did not answer \(method) within 30 s") }
        guard let result = answer.result else { throw ChildProcessError("the agent refused \(method): \(answer.error ?? "")") }
        return result
    }

    private func answer(_ key: String, _ message: ACPWire.Message?) {
        self.waiters.removeValue(forKey: key)?.resume(returning: message)
    }

    // MARK: Mirroring into the thread

    /// The msgId of the next mirror post: this run's, never reused.
    private func nextMsgID() -> String {
        self.counter += 1
        return "\(self.options.agent)-\(self.run)-acp-\(self.counter)"
    }

    /// Posts a frame to the thread (or keeps it until the thread is known).
    private func mirror(_ body: String, direction: String, msgID: String) async {
        guard let thread = self.thread else {
            if self.earlyBytes + body.utf8.count <= Self.maxEarlyBytes {
                self.early.append((body, direction, msgID))
                self.earlyBytes += body.utf8.count
            } else {
                AgentConnector.say("ACP: a frame before the session opened was not mirrored (\(Self.maxEarlyBytes >> 20) MiB waiting already)")
            }
            return
        }
        await self.post(body, direction: direction, msgID: msgID, thread: thread)
    }

    /// `POST /v1/ingest/acp/{thread}`, retried while ingest may take it later (six times, or,
    /// `untilStored`, until it does).
    private func post(_ body: String, direction: String, msgID: String, thread: String, untilStored: Bool = false) async {
        var query = URLComponents()
        query.queryItems = [
            URLQueryItem(name: "swarmId", value: self.options.swarm), URLQueryItem(name: "agentId", value: self.options.agent),
            URLQueryItem(name: "direction", value: direction),
            URLQueryItem(name: "msgId", value: msgID),
            // The thread names the session: the session's id, or a digest of an id ingest takes not.
            URLQueryItem(name: "sessionId", value: thread),
        ]
        let path = thread.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? thread
        var request = HTTPClientRequest(url: self.options.ingestURL + "/v1/ingest/acp/" + path + "?" + (query.percentEncodedQuery ?? ""))
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(self.options.key)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        var attempt = 0
        while true {
            let last = attempt == 5 && !untilStored
            do {
                let response = try await self.client.execute(request, timeout: .seconds(10))
                let answer = try await response.body.collect(upTo: 1 << 20)
                if response.status == .ok || response.status == .created || response.status == .accepted { return }
                if (400..<500).contains(response.status.code) && response.status.code != 429 {
                    AgentConnector.say("ACP: ingest refused a frame: \(response.status.code) \(String(buffer: answer).prefix(300))")
                    return
                }
                if last {
                    AgentConnector.say("ACP: a frame was not mirrored (ingest answered \(response.status.code) six times)")
                    return
                }
            } catch {
                if last {
                    AgentConnector.say("ACP: a frame was not mirrored (ingest unreachable): \(error)")
                    return
                }
            }
            if Task.isCancelled { return }
            try? await Task.sleep(for: .milliseconds(100 << min(attempt, 5)))
            attempt += 1
        }
    }

    // MARK: Delivering the thread to the agent

    private func deliverLoop() async {
        let url =
            self.options.streamURL.replacingOccurrences(of: "http", with: "ws", options: .anchored) + "/v1/acp?protocol=1"
        while !Task.isCancelled {
            do {
                let token = try await self.sessionToken()
                let subscribe = try JSONSerialization.data(
                    withJSONObject: [
                        "jsonrpc": "2.0", "id": "subscribe", "method": "acp.cache.subscribe",
                        "params": ["thread_id": self.thread ?? "", "from_seq": self.cursor + 1],
                    ] as [String: Any]
                )
                try await WebSocketClient.connect(
                    url: url,
                    configuration: .bearer(token, maxFrameSize: 8 << 20),
                    tlsConfiguration: ClientTrust.tlsConfiguration(),
                    logger: Logger(label: "acp", factory: { _ in SwiftLogNoOpLogHandler() })
                ) { inbound, outbound, _ in
                    try await outbound.write(.text(String(decoding: subscribe, as: UTF8.self)))
                    for try await message in inbound.messages(maxSize: 8 << 20) {
                        guard case .text(let text) = message else { continue }
                        if let envelope = ACPWire.envelope(text) {
                            await self.received(envelope)
                        } else if let answer = ACPWire.message(text), answer.id == #""subscribe""# {
                            guard answer.result != nil else {
                                throw ChildProcessError("the cache refused the subscription: \(text.prefix(300))")
                            }
                            await self.subscribed()
                        }
                    }
                }
                self.channelFailed(nil)
            } catch {
                if Task.isCancelled { return }
                self.channelFailed(error)
            }
            // Opened again after a pause that grows to 5 s while it does not get as far as the
            // subscription (a server that accepts and closes is not hammered).
            try? await Task.sleep(for: .milliseconds(min(self.channelFailures, 5) * 1000))
        }
    }

    private func subscribed() {
        self.channelFailures = 0
    }

    private func channelFailed(_ error: (any Error)?) {
        self.channelFailures += 1
        if let error { AgentConnector.say("ACP: the thread's channel: \(error)") }
    }

    /// An envelope of the thread: written to the agent when it is for it (waiting while its
    /// input is full: a paused or busy agent holds the cursor, nothing is dropped), then the
    /// cursor moves past it.
    private func received(_ envelope: ACPWire.Envelope) async {
        guard envelope.thread == self.thread, envelope.seq > self.cursor else { return }
        self.requests.seen(envelope)
        guard self.requests.delivery(of: envelope) == .deliver else {
            self.cursor = envelope.seq
            return
        }
        guard envelope.body.utf8.count < Self.maxInputBytes else {
            // It would never fit the agent's input queue.
            AgentConnector.say("ACP: frame \(envelope.seq) (\(envelope.body.utf8.count) bytes) is too large for the agent's input; skipped")
            self.cursor = envelope.seq
            return
        }
        var waited = false
        while true {
            do {
                try self.child.send(line: envelope.body)
                break
            } catch {
                // The queue is full (or the agent stopped reading): wait, unless it is gone.
                if !waited { AgentConnector.say("ACP: frame \(envelope.seq) waits for the agent's input: \(error)") }
                waited = true
                if !ProcessTree.alive(self.child.pid) { return }
                try? await Task.sleep(for: .milliseconds(200))
                if Task.isCancelled { return }
            }
        }
        self.cursor = envelope.seq
        self.saveState()
    }

    // MARK: The state file

    private func loadState() -> SavedState? {
        guard let path = self.options.stateFile, let data = FileManager.default.contents(atPath: path),
            let saved = try? JSONDecoder().decode(SavedState.self, from: data),
            saved.swarm == self.options.swarm, saved.agent == self.options.agent
        else { return nil }
        return saved
    }

    private func saveState() {
        guard let path = self.options.stateFile, let session = self.session, let thread = self.thread else { return }
        let saved = SavedState(swarm: self.options.swarm, agent: self.options.agent, session: session, thread: thread, cursor: self.cursor)
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try JSONEncoder().encode(saved).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            AgentConnector.say("ACP: the cursor was not saved to \(path): \(error)")
        }
    }
}

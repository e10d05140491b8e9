import ArgumentParser
import AsyncHTTPClient
import Contracts
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import ServiceKit
import SwarmdeckTools
import Synchronization

/// `swarmdeck-bench acp`: ACP both ways on the running stack (docs/stream-protocol.md, "Talking
/// to the agent"). Runs deploy/local/acp-agent under the connector (`--acp`) and measures, side
/// by side in one run:
/// - a phone's prompt on `/v1/acp` → the agent has read it from its stdin (its wall clock, same
///   host), and → the end of the turn back on the phone; idle, then while ingest takes
///   `--load-rate` events/s;
/// - resuming a thread of `--envelopes` envelopes from seq 1 to its head (seed 003's budget);
/// - the live latency of an envelope posted to ingest, on `/v1/stream` and on `/v1/acp` (what
///   the cache adds).
struct ACPBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "acp",
        abstract: "ACP on /v1/acp: phone frame → the agent's stdin, resume through a long thread, the cache's live latency."
    )

    @Option(help: "Prompts per phase (one at a time, each to the end of its turn).")
    var iterations = 200

    @Option(help: "Events/s ingest takes during the second phase (0: idle only).")
    var loadRate = 5000.0

    @Option(help: "Envelopes in the thread the resumes read.")
    var envelopes = 10_000

    @Option(help: "Resumes of that thread from seq 1.")
    var resumes = 10

    @Option(help: "A Python with agent-client-protocol (scripts/test's venv has it).")
    var python = ".build-venv/bin/python"

    @Option(help: "The ACP agent the connector runs.")
    var agentScript = "deploy/local/acp-agent"

    @OptionGroup var stack: StackBenchOptions

    func run() async throws {
        let key = try self.stack.ingestKey()
        let signer = try await self.stack.signer()
        let agent = "bench-acp-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("\(agent).json").path
        let connector = Process()
        connector.executableURL = URL(fileURLWithPath: self.stack.swarmdeck)
        connector.arguments = [
            "agent", "run", "--acp", "--acp-state", state, "--url", self.stack.url, "--swarm", "bench", "--name", agent, "--",
            self.python, self.agentScript,
        ]
        connector.environment = ProcessInfo.processInfo.environment.merging(["SWARMDECK_INGEST_KEY": key]) { $1 }
        connector.standardError = FileHandle.nullDevice
        connector.standardOutput = FileHandle.nullDevice
        try connector.run()
        defer {
            if connector.isRunning { kill(connector.processIdentifier, SIGTERM) }
            try? FileManager.default.removeItem(atPath: state)
        }
        var thread: String?
        for _ in 0..<600 where thread == nil {
            if let data = FileManager.default.contents(atPath: state), let saved = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
                thread = saved["thread"] as? String
            } else {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        guard let thread else {
            throw ValidationError("the connector never opened the agent's session (is \(self.python) one with agent-client-protocol?)")
        }
        let token = try await signer.sign(tenant: self.stack.tenant, subject: "bench-phone", scopes: [.threadRead, .threadWrite])
        let reader = try await signer.sign(tenant: self.stack.tenant, subject: "bench-reader", scopes: [.streamRead])
        let wsBase = self.stack.url.replacingOccurrences(of: "http", with: "ws", options: .anchored)
        print("acp-bench: agent \(agent), thread \(thread), via \(self.stack.url)")

        // 1. Prompts, idle and under load.
        let phone = try await BenchSocket.open(url: wsBase + "/v1/acp?protocol=1", token: token)
        phone.send(Self.json(["jsonrpc": "2.0", "id": "sub", "method": "acp.cache.subscribe", "params": ["thread_id": thread]]))
        _ = try await phone.waitFor { $0.contains(#""id":"sub""#) }
        let prompts = PromptRounds(phone: phone, thread: thread)
        var phases = [("idle", try await prompts.measure(self.iterations, until: nil))]
        if self.loadRate > 0 {
            let (loaded, report) = try await IngestLoad.during(
                url: self.stack.url,
                key: key,
                rate: self.loadRate,
                seconds: Double(self.iterations) * 0.05 + 12
            ) { deadline in
                try await prompts.measure(self.iterations, until: deadline)
            }
            phases.append((String(format: "ingest %.0f events/s", report.eventsPerSecond), loaded))
        }
        phone.close()

        // 2. Resume to head through a long thread.
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { _ = client.shutdown() }
        let long = "bench-resume-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let posting = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<16 {
                group.addTask {
                    for n in stride(from: worker, to: self.envelopes, by: 16) {
                        try await Self.postEnvelope(client, url: self.stack.url, key: key, thread: long, agent: agent, n: n)
                    }
                }
            }
            try await group.waitForAll()
        }
        print("acp-bench: \(self.envelopes) envelopes posted to \(long) in \(ContinuousClock.now - posting)")
        var resumed: [Duration] = []
        for round in 0..<self.resumes {
            let socket = try await BenchSocket.open(url: wsBase + "/v1/acp?protocol=1", token: token)
            let started = ContinuousClock.now
            socket.send(
                Self.json([
                    "jsonrpc": "2.0", "id": "r\(round)", "method": "acp.cache.subscribe",
                    "params": ["thread_id": long, "from_seq": 1, "live": false],
                ])
            )
            _ = try await socket.waitFor(timeout: .seconds(120)) { $0.contains(#""seq":\#(self.envelopes),"#) }
            resumed.append(ContinuousClock.now - started)
            socket.close()
        }

        // 3. The live latency of one envelope: /v1/stream beside /v1/acp.
        let live = "bench-live-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        try await Self.postEnvelope(client, url: self.stack.url, key: key, thread: live, agent: agent, n: -1)
        let cache = try await BenchSocket.open(url: wsBase + "/v1/acp?protocol=1", token: token)
        cache.send(Self.json(["jsonrpc": "2.0", "id": "sub", "method": "acp.cache.subscribe", "params": ["thread_id": live]]))
        _ = try await cache.waitFor { $0.contains(#""id":"sub""#) }
        let stream = try await BenchSocket.open(url: wsBase + "/v1/stream?protocol=1", token: reader)
        stream.send(StreamClientMessage(type: "subscribe", requestId: "bench", filters: .init(agentIds: [agent], include: ["acp"])).json)
        _ = try await stream.waitFor { $0.contains(#""type":"subscribed""#) }
        var onStream: [Duration] = []
        var onCache: [Duration] = []
        for n in 0..<self.iterations {
            let marker = "live-\(n)-"
            let started = ContinuousClock.now
            try await Self.postEnvelope(client, url: self.stack.url, key: key, thread: live, agent: agent, n: n, marker: marker)
            async let viaStream = stream.waitFor { $0.contains(marker) }
            async let viaCache = cache.waitFor { $0.contains(marker) }
            onStream.append(try await viaStream.arrived - started)
            onCache.append(try await viaCache.arrived - started)
        }
        stream.close()
        cache.close()

        kill(connector.processIdentifier, SIGTERM)
        connector.waitUntilExit()
        for (phase, measured) in phases {
            print(GateBench.line("\(phase): prompt → the agent read it", measured.toAgent))
            print(GateBench.line("\(phase): prompt → end of turn on the phone", measured.turn))
        }
        print(GateBench.line("resume \(self.envelopes) envelopes to head", resumed))
        print(GateBench.line("envelope POST → /v1/stream", onStream))
        print(GateBench.line("envelope POST → /v1/acp", onCache))
        let median = { (values: [Duration]) in values.sorted().atQuantile(0.5)?.millisecondsDouble ?? 0 }
        print(String(format: "acp-bench: the cache adds %.1f ms at p50 to live latency", median(onCache) - median(onStream)))
    }

    static func json(_ object: [String: Any]) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: object)) ?? Data(), as: UTF8.self)
    }

    /// Posts one `session/update` of the agent to `thread` (retrying ingest's rate limits).
    static func postEnvelope(_ client: HTTPClient, url: String, key: String, thread: String, agent: String, n: Int, marker: String = "") async throws
    {
        let body =
            #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"\#(thread)","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\#(marker)n \#(n)"}}}}"#
        let query = "swarmId=bench&agentId=\(agent)&direction=agent_to_client&msgId=\(thread)-\(n)"
        for attempt in 0..<50 {
            var request = HTTPClientRequest(url: "\(url)/v1/ingest/acp/\(thread)?\(query)")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(key)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
            let response = try await client.execute(request, timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 1 << 20)
            if response.status == .ok { return }
            guard response.status.code == 429 || response.status.code == 503, attempt < 49 else {
                throw ValidationError("ingest answered \(response.status.code) to an ACP post")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

/// Prompts sent one at a time on `phone`, each timed to the agent (its `received <ns>` chunk,
/// wall clock) and to the end of its turn.
struct PromptRounds: Sendable {
    let phone: BenchSocket
    let thread: String
    private let counter = BenchSequence()

    init(phone: BenchSocket, thread: String) {
        self.phone = phone
        self.thread = thread
    }

    func measure(_ count: Int, until deadline: ContinuousClock.Instant?) async throws -> (toAgent: [Duration], turn: [Duration]) {
        var toAgent: [Duration] = []
        var turn: [Duration] = []
        for _ in 0..<count {
            if let deadline, ContinuousClock.now >= deadline { break }
            let id = self.counter.next()
            let prompt = ACPBench.json([
                "jsonrpc": "2.0", "id": id, "method": "session/prompt",
                "params": ["sessionId": self.thread, "prompt": [["type": "text", "text": "stamp \(id)"]]],
            ])
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let sentNanoseconds = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
            let started = ContinuousClock.now
            let mark = self.phone.mark()
            self.phone.send(prompt)
            let stamp = try await self.phone.waitFor(after: mark) { $0.contains(#""text":"received "#) }
            let end = try await self.phone.waitFor(after: mark) {
                $0.contains(#""id":\#(id),"result""#) || $0.contains(#""stopReason""#) && $0.contains(#""id":\#(id)"#)
            }
            turn.append(end.arrived - started)
            if let range = stamp.text.range(of: #""text":"received "#), let received = Int64(stamp.text[range.upperBound...].prefix { $0.isNumber }) {
                toAgent.append(.nanoseconds(received - sentNanoseconds))
            }
        }
        return (toAgent, turn)
    }
}

/// A WebSocket held open for a bench: what it receives is kept with its arrival instant, for
/// waits on a predicate.
final class BenchSocket: Sendable {
    struct Arrival: Sendable {
        var text: String
        var arrived: ContinuousClock.Instant
    }

    private let received = Mutex<[Arrival]>([])
    /// Why the connection ended, when it failed.
    private let failure = Mutex<String?>(nil)
    private let outgoing: AsyncStream<String>.Continuation
    private let task: Mutex<Task<Void, any Error>?> = Mutex(nil)

    private init(outgoing: AsyncStream<String>.Continuation) {
        self.outgoing = outgoing
    }

    static func open(url: String, token: String) async throws -> BenchSocket {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let socket = BenchSocket(outgoing: continuation)
        let task = Task {
            do {
                _ = try await WebSocketClient.connect(
                    url: url,
                    configuration: .bearer(token, maxFrameSize: 8 << 20),
                    logger: Logger(label: "acp-bench")
                ) {
                    inbound,
                    outbound,
                    _ in
                    let writer = Task {
                        for await text in stream { try await outbound.write(.text(text)) }
                    }
                    defer { writer.cancel() }
                    for try await message in inbound.messages(maxSize: 8 << 20) {
                        guard case .text(let text) = message else { continue }
                        let now = ContinuousClock.now
                        socket.received.withLock { $0.append(Arrival(text: text, arrived: now)) }
                    }
                }
            } catch {
                socket.failure.withLock { $0 = "\(error)" }
                throw error
            }
        }
        socket.task.withLock { $0 = task }
        return socket
    }

    func send(_ text: String) { self.outgoing.yield(text) }

    /// How many messages came so far (a wait after it sees only later ones).
    func mark() -> Int { self.received.withLock { $0.count } }

    /// The first message after `mark` that `match` accepts, waiting up to `timeout`.
    func waitFor(after mark: Int = 0, timeout: Duration = .seconds(30), _ match: @Sendable (String) -> Bool) async throws -> Arrival {
        let deadline = ContinuousClock.now + timeout
        var from = mark
        while ContinuousClock.now < deadline {
            let (found, count): (Arrival?, Int) = self.received.withLock { received in
                (received[min(from, received.count)...].first { match($0.text) }, received.count)
            }
            if let found { return found }
            from = count
            try await Task.sleep(for: .milliseconds(1))
        }
        let failure = self.failure.withLock { $0 }
        throw ValidationError(
            "nothing matching arrived within \(timeout)\(failure.map { " (the connection failed: \($0))" } ?? ""); last: \(self.received.withLock { $0.suffix(2).map(\.text) })"
        )
    }

    func close() {
        self.outgoing.finish()
        self.task.withLock { $0?.cancel() }
    }
}

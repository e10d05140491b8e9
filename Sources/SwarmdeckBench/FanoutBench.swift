import ArgumentParser
import AsyncHTTPClient
import Contracts
import Foundation
import Logging
import NIOCore
import PlainWebSocket
import ServiceKit
import SwarmdeckTools
import Synchronization

/// `swarmdeck-bench fanout`: N WebSocket clients on stream-fanout, events driven through ingest; then the
/// same fanout by nats-server's own WebSocket listener to as many clients, in the same run.
/// Prints delivered messages/s, latency p50/p99 and memory per connection for both, and the
/// throughput ratio. Point it only at servers of your own on this machine.
struct FanoutBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout",
        abstract: "Stream-fanout beside nats-server's WebSocket listener: N clients, delivered msgs/s, latency, memory per connection."
    )

    @Option(help: "Client counts to run, comma-separated.")
    var clients = "1000"

    @Option(help: "Events per run (each goes to every client).")
    var events = 300

    @Option(help: "Events per ingest request.")
    var batch = 50

    @Option(help: "Bytes of padding in each event's message (bigger events fill slow sockets sooner).")
    var payload = 0

    @Option(help: "Events per second to send (0: as fast as ingest takes them). A modest rate measures latency; 0 measures throughput.")
    var rate: Double = 0

    @Option(help: "stream-fanout base URL.")
    var fanoutURL = "ws://127.0.0.1:9102"

    @Option(help: "ingest base URL.")
    var ingestURL = "http://127.0.0.1:9101"

    @Option(help: "Access token with stream:read (default: $SWARMDECK_TOKEN).")
    var token: String?

    @Option(help: "Ingest key (default: $SWARMDECK_INGEST_KEY).")
    var key: String?

    @Option(help: "stream-fanout's pid, for its memory (default: .swarmdeck/run/stream-fanout.pid).")
    var fanoutPID: Int32?

    @Option(help: "The nats-server binary for the comparison.")
    var natsServer = "/usr/sbin/nats-server"

    @Option(help: "Resumes to time, each replaying a 10k-event backlog to the head.")
    var resumes = 20

    @Option(help: "Then run stream-fanout again beside this many clients that subscribe and never read, to compare the others' latency.")
    var slowClients = 0

    @Option(
        help:
            "stream-fanout's modes to run, comma-separated: single (one event per WebSocket message) and batched (batchEvents: several per message when they queue up, as nats-server packs them)."
    )
    var modes = "single,batched"

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let token = self.token ?? environment["SWARMDECK_TOKEN"], let key = self.key ?? environment["SWARMDECK_INGEST_KEY"] else {
            throw ValidationError("need --token and --key (or source .swarmdeck/local.env)")
        }
        let fanoutPID = self.fanoutPID ?? Self.pidFile("stream-fanout")
        let counts = self.clients.split(separator: ",").compactMap { Int($0) }
        let modes = self.modes.split(separator: ",").map { $0 == "batched" }
        guard !modes.isEmpty, self.modes.split(separator: ",").allSatisfy({ $0 == "single" || $0 == "batched" }) else {
            throw ValidationError("--modes takes single, batched or both")
        }
        let nats = try NATSWebSocketServer(binary: self.natsServer)
        defer { nats.stop() }
        for count in counts {
            var fanout: [(batched: Bool, report: Report)] = []
            var head: Int64 = 0
            for batched in modes {
                let (report, last) = try await self.fanoutRun(clients: count, batched: batched, token: token, key: key, pid: fanoutPID)
                print(report.printed(batched ? "stream-fanout (batchEvents)" : "stream-fanout", clients: count))
                fanout.append((batched, report))
                head = last
            }
            let reference = try await self.natsRun(clients: count, server: nats)
            print(reference.printed("nats-server ws", clients: count))
            for (batched, report) in fanout {
                print(
                    String(
                        format: "ratio stream-fanout%@/nats-server ws, %d clients: delivered msgs/s %.2f; server CPU per delivered message %.2f",
                        batched ? " (batchEvents)" : "",
                        count,
                        report.rate / reference.rate,
                        report.serverCPUPerMessage / reference.serverCPUPerMessage
                    )
                )
            }
            if head > 10_000, self.resumes > 0 {
                for batched in modes {
                    print(try await self.resumeRun(token: token, head: head, batched: batched))
                }
            } else if self.resumes > 0 {
                print("resume to head: not timed, the tenant's log holds \(head) events and a resume replays 10,000 (post more with --events)")
            }
            if self.slowClients > 0 {
                let subscribe = StreamClientMessage(
                    type: "subscribe",
                    filters: .init(swarmIds: ["bench"], include: ["logs"]),
                    maxEventsPerSecond: 10_000
                ).json
                let slow = try await Connector.open(self.slowClients, board: Board(expected: 0)) {
                    Connection(
                        url: self.fanoutURL + "/v1/stream?protocol=1",
                        token: token,
                        hello: [subscribe],
                        ready: #""type":"subscribed""#,
                        reads: false
                    )
                }
                let (beside, _) = try await self.fanoutRun(clients: count, batched: modes[0], token: token, key: key, pid: fanoutPID)
                print(beside.printed("stream-fanout beside \(self.slowClients) clients that never read", clients: count))
                await slow.close()
            }
        }
    }

    /// The pid in the local stack's `.swarmdeck/run/<name>.pid`, or 0.
    static func pidFile(_ name: String) -> Int32 {
        (try? String(contentsOfFile: ".swarmdeck/run/\(name).pid", encoding: .utf8)).flatMap {
            Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
        } ?? 0
    }

    // MARK: resume

    /// Connect, subscribe with `lastEventId` 10000 behind the head, time until the head arrives.
    private func resumeRun(token: String, head: Int64, batched: Bool) async throws -> String {
        var times: [Duration] = []
        for _ in 0..<self.resumes {
            let started = ContinuousClock.now
            let message = StreamClientMessage(
                type: "subscribe",
                lastEventId: .init(seq: head - 10_000),
                maxEventsPerSecond: 10_000,
                batchEvents: batched
            ).json
            let marker = Array(#"{"seq":\#(head),"#.utf8)
            var found = false
            let close = try await PlainWebSocket.connect(url: self.fanoutURL + "/v1/stream?protocol=1", bearer: token, closeTimeout: .seconds(1)) {
                inbound,
                outbound in
                try await outbound.write(text: message)
                while let (_, data) = try await inbound.nextPayload() {
                    if data.contains(marker) {
                        found = true
                        return
                    }
                }
            }
            guard found else {
                throw ValidationError("a resume ended before the head: \(close.map { "\($0.closeCode) \($0.reason ?? "")" } ?? "no close")")
            }
            times.append(ContinuousClock.now - started)
        }
        let sorted = times.sorted()
        func ms(_ p: Double) -> Double { (sorted.atQuantile(p)?.seconds ?? 0) * 1000 }
        return String(
            format: "resume to head with a 10000-event backlog%@ (%d resumes, connect included): p50 %.1f ms, p99 %.1f ms",
            batched ? " (batchEvents)" : "",
            sorted.count,
            ms(0.5),
            ms(0.99)
        )
    }

    // MARK: stream-fanout

    /// The run's report and the last seq it wrote.
    private func fanoutRun(clients: Int, batched: Bool, token: String, key: String, pid: Int32) async throws -> (Report, Int64) {
        let board = Board(expected: clients * self.events)
        let rssBefore = Memory.rss(pid)
        let heapBefore = await self.fanoutHeap()
        let subscribe = StreamClientMessage(
            type: "subscribe",
            filters: .init(swarmIds: ["bench"], include: ["logs"]),
            maxEventsPerSecond: 10_000,
            batchEvents: batched
        ).json
        let sessions = try await Connector.open(clients, board: board) {
            Connection(url: self.fanoutURL + "/v1/stream?protocol=1", token: token, hello: [subscribe], ready: #""type":"subscribed""#)
        }
        let rssIdle = Memory.rss(pid)
        let heapIdle = await self.fanoutHeap()
        // Every process of the path: the server, the clients (this process), and what feeds it.
        let stackNATS = ProcessCPU.pids(named: "nats-server").filter { $0 != self.natsPIDToSkip }
        let processes: [(String, [Int32])] = [
            ("stream-fanout", [pid]), ("clients (bench)", [getpid()]), ("ingest", [Self.pidFile("ingest")]), ("nats-server", stackNATS),
            ("postgres", ProcessCPU.pids(named: "postgres")),
        ]
        let cpuBefore = ProcessCPU.Sample(processes)
        // Drive the events through ingest, stamped with the time they are sent.
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let run = String(UInt64.random(in: 0..<UInt64.max), radix: 36)
        let padding = String(repeating: "x", count: self.payload)
        let deliveryBefore = await self.fanoutDelivery()
        let catchUpsBefore = await self.fanoutCounter("fanout_catch_ups_total")
        board.start()
        var sent = 0
        var head: Int64 = 0
        let started = ContinuousClock.now
        while sent < self.events {
            if self.rate > 0 {
                try await Task.sleep(until: started + .seconds(Double(sent) / self.rate))
            }
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let items = (0..<min(self.batch, self.events - sent)).map { index in
                #"{"msgId":"fb-\#(run)-\#(sent + index)","swarmId":"bench","agentId":"bench","kind":"log","ts":\#(now),"message":"fanout bench event\#(padding)"}"#
            }
            var request = HTTPClientRequest(url: self.ingestURL + "/v1/ingest/events")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(key)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: #"{"events":["# + items.joined(separator: ",") + "]}"))
            let response = try await http.execute(request, timeout: .seconds(30))
            let answer = try await response.body.collect(upTo: 1 << 20)
            guard response.status == .ok else { throw ValidationError("ingest answered \(response.status)") }
            struct Answer: Decodable {
                struct Item: Decodable { var seq: Int64? }
                var results: [Item]
            }
            head = (try? JSONDecoder().decode(Answer.self, from: answer))?.results.compactMap(\.seq).max() ?? head
            sent += items.count
        }
        try await http.shutdown()
        var report = await board.finish(timeout: .seconds(120))
        report.cpu = ProcessCPU.Sample(processes).since(cpuBefore, order: processes.map(\.0))
        if pid > 0, clients > 0 {
            report.memory = (idle: (rssIdle - rssBefore) / clients, afterBurst: (Memory.rss(pid) - rssBefore) / clients)
        }
        if let deliveryAfter = await self.fanoutDelivery() {
            // The histogram appears with its first sample: none before means zeros.
            let before = Dictionary(deliveryBefore ?? [], uniquingKeysWith: { first, _ in first })
            report.inside = deliveryAfter.map { bound, count in (bound, count - (before[bound] ?? 0)) }
        }
        if let catchUpsAfter = await self.fanoutCounter("fanout_catch_ups_total") {
            report.catchUps = catchUpsAfter - (catchUpsBefore ?? 0)
        }
        if let heapBefore, let heapIdle, let heapAfter = await self.fanoutHeap(), clients > 0 {
            report.heap = (idle: (heapIdle - heapBefore) / clients, afterBurst: (heapAfter - heapBefore) / clients)
        }
        await sessions.close()
        return (report, head)
    }

    /// stream-fanout's live heap (`process_heap_bytes` on its `/metrics`), or nil.
    private func fanoutHeap() async -> Int? {
        await self.fanoutCounter("process_heap_bytes")
    }

    /// A metric without labels on stream-fanout's `/metrics`, or nil (none yet: a counter
    /// appears with its first increment).
    private func fanoutCounter(_ name: String) async -> Int? {
        await self.fanoutMetrics()?.value(name).map { Int($0) }
    }

    /// The cumulative counts of the fanout's `fanout_delivery_seconds` histogram, by upper
    /// bound in seconds; nil when it has none.
    private func fanoutDelivery() async -> [(Double, Double)]? {
        guard let metrics = await self.fanoutMetrics() else { return nil }
        let buckets = metrics.lines.compactMap { line -> (Double, Double)? in
            let prefix = "fanout_delivery_seconds_bucket{le=\""
            guard line.hasPrefix(prefix), let quote = line.dropFirst(prefix.count).firstIndex(of: "\"") else { return nil }
            let bound = line[line.index(line.startIndex, offsetBy: prefix.count)..<quote]
            guard let count = line.split(separator: " ").last.flatMap({ Double($0) }) else { return nil }
            return (bound == "+Inf" ? .infinity : Double(bound) ?? .infinity, count)
        }
        return buckets.isEmpty ? nil : buckets.sorted { $0.0 < $1.0 }
    }

    private func fanoutMetrics() async -> MetricsPage? {
        await MetricsPage.read(
            self.fanoutURL.replacingOccurrences(of: "wss://", with: "https://").replacingOccurrences(of: "ws://", with: "http://") + "/metrics"
        )
    }

    /// The bench's own nats-server, not counted as the stack's.
    private var natsPIDToSkip: Int32 { NATSWebSocketServer.current.withLock { $0 } }

    // MARK: nats-server's WebSocket listener

    private func natsRun(clients: Int, server: NATSWebSocketServer) async throws -> Report {
        let board = Board(expected: clients * self.events)
        let rssBefore = Memory.rss(server.pid)
        let subject = "bench." + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
        let sessions = try await Connector.open(clients, board: board) {
            Connection(
                url: "ws://127.0.0.1:\(server.webSocketPort)",
                token: "",
                hello: ["CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1}\r\nSUB \(subject) 1\r\nPING\r\n"],
                ready: "PONG"
            )
        }
        let rssIdle = Memory.rss(server.pid)
        let processes: [(String, [Int32])] = [("nats-server ws", [server.pid]), ("clients and publisher (bench)", [getpid()])]
        let cpuBefore = ProcessCPU.Sample(processes)
        let publisher = try await NATSConnection.connect(NATSConfiguration(servers: ["nats://127.0.0.1:\(server.clientPort)"], name: "bench"))
        let padding = String(repeating: "x", count: self.payload)
        board.start()
        let started = ContinuousClock.now
        for index in 0..<self.events {
            if self.rate > 0, index % self.batch == 0 {
                try await Task.sleep(until: started + .seconds(Double(index) / self.rate))
            }
            // The same shape and size as a stream frame, stamped like one.
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let payload =
                #"{"seq":1,"eventId":"1","type":"log","ts":\#(now),"swarmId":"bench","agentId":"bench","severity":"info","level":"info","message":"fanout bench event\#(padding)"}"#
            try publisher.publish(Array(payload.utf8), to: subject)
        }
        try await publisher.flush(timeout: .seconds(120))
        var report = await board.finish(timeout: .seconds(120))
        report.cpu = ProcessCPU.Sample(processes).since(cpuBefore, order: processes.map(\.0))
        if clients > 0 {
            report.memory = (idle: (rssIdle - rssBefore) / clients, afterBurst: (Memory.rss(server.pid) - rssBefore) / clients)
        }
        await publisher.drain()
        await sessions.close()
        return report
    }
}

/// What one run measured.
struct Report {
    var delivered: Int
    var frames: Int
    var expected: Int
    var elapsed: Duration
    var latencies: [Int32]
    /// CPU seconds per process group during the run; the first is the server's.
    var cpu: [(String, Double)] = []
    /// RSS growth per connection once connected, and after the burst; nil when the server's
    /// pid is unknown.
    var memory: (idle: Int, afterBurst: Int)?
    /// Live heap growth per connection, the same way (the server's `process_heap_bytes`); nil
    /// when it has none.
    var heap: (idle: Int, afterBurst: Int)?
    /// The run's share of the server's own delivery histogram (NATS batch in → the writer's
    /// write): cumulative counts by upper bound in seconds.
    var inside: [(Double, Double)]?
    /// Queue overflows caught up from the log during the run (`fanout_catch_ups_total`); nil
    /// when the server does not say.
    var catchUps: Int?

    /// The upper bound of the bucket holding quantile `p` of ``inside``.
    func insideQuantile(_ p: Double) -> Double? {
        guard let inside = self.inside, let total = inside.last?.1, total > 0 else { return nil }
        return inside.first { $0.1 >= p * total }?.0
    }

    var rate: Double { Double(self.delivered) / max(self.elapsed.seconds, 1e-9) }

    /// The server's CPU seconds per delivered message.
    var serverCPUPerMessage: Double { (self.cpu.first?.1 ?? 0) / Double(max(self.delivered, 1)) }

    func printed(_ name: String, clients: Int) -> String {
        let sorted = self.latencies.sorted()
        func percentile(_ p: Double) -> Int32 { sorted.atQuantile(p) ?? -1 }
        var lines = [
            String(
                format:
                    "%@, %d clients: %.0f msgs/s delivered (%d of %d in %.2f s, in %d WebSocket messages); send-to-client latency p50 %d ms, p99 %d ms",
                name,
                clients,
                self.rate,
                self.delivered,
                self.expected,
                self.elapsed.seconds,
                self.frames,
                percentile(0.5),
                percentile(0.99)
            )
        ]
        if let p50 = self.insideQuantile(0.5), let p99 = self.insideQuantile(0.99) {
            lines.append(
                String(
                    format:
                        "  inside the server (NATS batch in → the writer's write, per connection batch): p50 ≤ %.2f ms, p99 ≤ %.2f ms (%.0f batches)",
                    p50 * 1000,
                    p99 * 1000,
                    self.inside?.last?.1 ?? 0
                )
            )
        }
        if let catchUps = self.catchUps, catchUps > 0 {
            lines.append("  \(catchUps) connection queues overflowed and caught up from the log (fanout_catch_ups_total)")
        }
        lines.append(
            "  CPU seconds: "
                + self.cpu.map { String(format: "%@ %.2f", $0.0, $0.1) }.joined(separator: ", ")
                + String(format: "; server CPU per delivered message %.2f µs", self.serverCPUPerMessage * 1e6)
        )
        lines.append(
            (self.memory.map { "  memory per connection (RSS growth): \($0.idle) bytes idle, \($0.afterBurst) bytes after the burst" }
                ?? "  memory unknown (no server pid)")
                + (self.heap.map { "; live heap growth: \($0.idle) bytes idle, \($0.afterBurst) bytes after the burst" } ?? "")
        )
        return lines.joined(separator: "\n")
    }
}

extension ByteBuffer {
    /// Whether `needle` occurs in the readable bytes: a plain scan, without the generic
    /// collection algorithms (which cost the bench more than the server it measures).
    func contains(_ needle: [UInt8]) -> Bool {
        guard let first = needle.first else { return true }
        return self.withUnsafeReadableBytes { bytes in
            guard bytes.count >= needle.count else { return false }
            var index = 0
            while index <= bytes.count - needle.count {
                if bytes[index] == first {
                    var matched = 1
                    while matched < needle.count, bytes[index + matched] == needle[matched] { matched += 1 }
                    if matched == needle.count { return true }
                }
                index += 1
            }
            return false
        }
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// Counts deliveries across clients and their latencies (from the `"ts":` stamp in each).
final class Board: Sendable {
    private struct State {
        var delivered = 0
        var frames = 0
        var latencies: [Int32] = []
        var started: ContinuousClock.Instant?
        var last: ContinuousClock.Instant?
    }

    let expected: Int
    private let state: Mutex<State>

    init(expected: Int) {
        self.expected = expected
        var state = State()
        state.latencies.reserveCapacity(expected)
        self.state = Mutex(state)
    }

    func start() {
        self.state.withLock { $0.started = .now }
    }

    /// One WebSocket message: every `"ts":<ms>` in it is one delivered message (a stream event,
    /// or a NATS message); the stream's pings (`{"ts":…,"type":"ping"}`) are not. Allocates
    /// nothing.
    func received(_ buffer: ByteBuffer) {
        if buffer.readableBytesView.starts(with: #"{"ts":"#.utf8) { return }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        buffer.withUnsafeReadableBytes { bytes in
            self.state.withLock { state in
                var found = false
                // `"ts":` is 0x22 0x74 0x73 0x22 0x3A.
                var index = 0
                while index + 5 < bytes.count {
                    guard bytes[index] == 0x22, bytes[index + 1] == 0x74, bytes[index + 2] == 0x73, bytes[index + 3] == 0x22,
                        bytes[index + 4] == 0x3A
                    else {
                        index += 1
                        continue
                    }
                    var cursor = index + 5
                    var value: Int64 = 0
                    while cursor < bytes.count, bytes[cursor] >= 48, bytes[cursor] <= 57 {
                        value = value * 10 + Int64(bytes[cursor] - 48)
                        cursor += 1
                    }
                    state.latencies.append(Int32(clamping: now - value))
                    state.delivered += 1
                    found = true
                    index = cursor
                }
                if found {
                    state.frames += 1
                    state.last = .now
                }
            }
        }
    }

    func finish(timeout: Duration) async -> Report {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, self.state.withLock({ $0.delivered < self.expected }) {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return self.state.withLock { state in
            Report(
                delivered: state.delivered,
                frames: state.frames,
                expected: self.expected,
                elapsed: (state.last ?? .now) - (state.started ?? .now),
                latencies: state.latencies
            )
        }
    }
}

/// How to open one client: its URL, what it sends first, and the text that says it is ready.
struct Connection: Sendable {
    var url: String
    /// Sent as `Authorization: Bearer` on the upgrade (none when empty).
    var token: String
    var hello: [String]
    var ready: String
    /// false: once ready, read nothing more (a slow client).
    var reads = true
}

/// Opens many WebSocket clients (the project's own client, ``PlainWebSocket``), each counting
/// what it receives on the board. A client refused or closed before it is ready fails the
/// opening at once, with the reason.
struct Connector {
    let tasks: [Task<Void, any Error>]

    static func open(_ count: Int, board: Board, _ make: @Sendable () -> Connection) async throws -> Connector {
        let readyCount = Tally()
        let refusal = FirstReason()
        var tasks: [Task<Void, any Error>] = []
        for index in 0..<count {
            let connection = make()
            let ready = Array(connection.ready.utf8)
            tasks.append(
                Task {
                    var isReady = false
                    do {
                        let close = try await PlainWebSocket.connect(
                            url: connection.url,
                            bearer: connection.token.isEmpty ? nil : connection.token,
                            maxMessageBytes: 1 << 20,
                            closeTimeout: .seconds(1)
                        ) { inbound, outbound in
                            for message in connection.hello { try await outbound.write(text: message) }
                            while let (_, data) = try await inbound.nextPayload() {
                                if isReady {
                                    board.received(data)
                                } else if data.contains(ready) {
                                    isReady = true
                                    readyCount.add()
                                    if !connection.reads { try await Task.sleep(for: .seconds(86_400)) }
                                }
                            }
                        }
                        if !isReady {
                            refusal.note { "closed before ready: \(close.map { "\($0.closeCode) \($0.reason ?? "")" } ?? "no close frame")" }
                        }
                    } catch {
                        if !isReady, !(error is CancellationError) { refusal.note { "\(error)" } }
                        throw error
                    }
                }
            )
            // Open in waves, so the servers' accept queues keep up.
            if index % 200 == 199 {
                while readyCount.value < index - 400 {
                    if let reason = refusal.reason { throw Self.refused(reason, ready: readyCount.value, count: count, tasks) }
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while readyCount.value < count {
            if let reason = refusal.reason { throw Self.refused(reason, ready: readyCount.value, count: count, tasks) }
            guard ContinuousClock.now < deadline else { throw ValidationError("only \(readyCount.value) of \(count) clients became ready") }
            try await Task.sleep(for: .milliseconds(20))
        }
        return Connector(tasks: tasks)
    }

    private static func refused(_ reason: String, ready: Int, count: Int, _ tasks: [Task<Void, any Error>]) -> ValidationError {
        for task in tasks { task.cancel() }
        return ValidationError("a client was refused after \(ready) of \(count) became ready: \(reason)")
    }

    func close() async {
        for task in self.tasks { task.cancel() }
        for task in self.tasks { _ = await task.result }
    }
}

/// The first reason given, of many tasks.
final class FirstReason: Sendable {
    private let first = Mutex<String?>(nil)

    var reason: String? { self.first.withLock { $0 } }

    func note(_ reason: () -> String) {
        self.first.withLock { $0 = $0 ?? reason() }
    }
}

final class Tally: Sendable {
    private let count = Mutex(0)

    var value: Int { self.count.withLock { $0 } }

    func add() {
        self.count.withLock { $0 += 1 }
    }
}

/// A nats-server of the bench's own with a WebSocket listener, on free loopback ports.
final class NATSWebSocketServer: Sendable {
    /// The pid of the one running, so the stack's nats-server can be told from it.
    static let current = Mutex<Int32>(0)

    let clientPort: Int
    let webSocketPort: Int
    let pid: Int32
    private let process: Process

    init(binary: String) throws {
        func freePort() throws -> Int {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            return Int(UInt16(bigEndian: address.sin_port))
        }
        self.clientPort = try freePort()
        self.webSocketPort = try freePort()
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-bench-nats-\(UUID().uuidString).conf")
        try """
        listen: 127.0.0.1:\(self.clientPort)
        max_connections: 100000
        websocket { listen: "127.0.0.1:\(self.webSocketPort)", no_tls: true }
        """.write(to: config, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-c", config.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        self.pid = process.processIdentifier
        Self.current.withLock { $0 = process.processIdentifier }
        Thread.sleep(forTimeInterval: 0.5)
    }

    func stop() {
        if self.process.isRunning {
            self.process.terminate()
            self.process.waitUntilExit()
        }
    }
}

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

/// `swarmdeck-bench health`, on the running stack:
///
/// 1. **Breach → incident**: posts a usage event that puts a new session at 95 % of its window
///    (rule `for` = 0) and times until the `incident` frame arrives on `/v1/stream`, from the
///    POST (an upper bound) and from ingest's 202 (sent after commit); idle, then under ingest
///    load.
/// 2. **Keeping up**: ingest at full rate for `--throughput-seconds`; events/s ingest published
///    against events/s health-monitor applied in the same window (its `/metrics`), and how long
///    it took to catch up after.
/// 3. **Memory**: health-monitor's resident memory before and after `--sessions` new sessions
///    and `--tools` new tools, per session and per tool, and after ten times as many sessions
///    (bounded by `health.max-sessions-per-tenant`).
struct HealthBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Health-monitor: breaching event → incident frame; events/s against ingest's; memory per session and tool."
    )

    @Option(help: "Breaches timed per phase.")
    var iterations = 100

    @Option(help: "Events/s ingest takes during the second latency phase (0: no second phase).")
    var loadRate = 5000.0

    @Option(help: "Seconds of ingest at full rate for the throughput phase (0: skip it).")
    var throughputSeconds = 20

    @Option(help: "New sessions for the memory phase (0: skip it); at most health.max-sessions-per-tenant are kept.")
    var sessions = 2000

    @Option(help: "New tools for the memory phase.")
    var tools = 400

    @Option(help: "Health-monitor's own base URL (its /metrics).")
    var healthURL = "http://127.0.0.1:9105"

    @Option(help: "Ingest's own base URL (its /metrics).")
    var ingestURL = "http://127.0.0.1:9101"

    @OptionGroup var stack: StackBenchOptions

    func run() async throws {
        let key = try self.stack.ingestKey()
        let signer = try await self.stack.signer()
        let run = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let swarm = "health-bench-" + run
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let poster = EventPoster(http: http, url: self.stack.url, key: key)

        // 1. Breach → incident frame.
        let reader = try await signer.sign(tenant: self.stack.tenant, subject: "health-bench", scopes: [.streamRead])
        let arrivals = Arrivals()
        let streamURL =
            self.stack.url.replacingOccurrences(of: "http", with: "ws", options: .anchored) + "/v1/stream?protocol=1"
        let subscribe = StreamClientMessage(type: "subscribe", requestId: "bench", filters: .init(swarmIds: [swarm], include: ["incidents"])).json
        let stream = Task {
            try await WebSocketClient.connect(url: streamURL, configuration: .bearer(reader), logger: Logger(label: "health-bench")) {
                inbound,
                outbound,
                _ in
                try await outbound.write(.text(subscribe))
                for try await frame in inbound.messages(maxSize: 1 << 20) {
                    guard case .text(let text) = frame else { continue }
                    if text.contains(#""type":"subscribed""#) { arrivals.subscribed() }
                    for object in Self.frames(text) where object["type"] as? String == "incident" && object["status"] as? String == "firing" {
                        if let session = object["sessionId"] as? String { arrivals.arrived(session) }
                    }
                }
            }
        }
        defer { stream.cancel() }
        while !arrivals.isSubscribed { try await Task.sleep(for: .milliseconds(10)) }
        print("health-bench: \(self.iterations) breaches per phase in swarm \(swarm) via \(self.stack.url)")
        let sequence = BenchSequence()
        let breach: @Sendable (ContinuousClock.Instant?) async throws -> ([Duration], [Duration]) = { deadline in
            var fromPost: [Duration] = []
            var fromAck: [Duration] = []
            for _ in 0..<self.iterations {
                if let deadline, ContinuousClock.now > deadline { break }
                let session = "\(swarm)-s\(sequence.next())"
                let event: [String: Any] = [
                    "kind": "usage", "swarmId": swarm, "agentId": session, "model": "claude-sonnet-4-5", "inputTokens": 190_000, "outputTokens": 1,
                    "attrs": ["session.id": session],
                ]
                let sent = ContinuousClock.now
                try await poster.post([event])
                let acknowledged = ContinuousClock.now
                let arrived = try await arrivals.wait(for: session, timeout: .seconds(10))
                fromPost.append(arrived - sent)
                fromAck.append(arrived - acknowledged)
            }
            return (fromPost, fromAck)
        }
        var phases = [("idle", try await breach(nil))]
        if self.loadRate > 0 {
            let (loaded, report) = try await IngestLoad.during(
                url: self.stack.url,
                key: key,
                rate: self.loadRate,
                seconds: Double(self.iterations) * 0.1 + 12
            ) {
                try await breach($0)
            }
            phases.append((String(format: "ingest %.0f events/s", report.eventsPerSecond), loaded))
        }
        for (name, (fromPost, fromAck)) in phases {
            print(GateBench.line("\(name): POST sent → incident frame", fromPost))
            print(GateBench.line("\(name): 202 (committed) → incident frame", fromAck))
        }

        // 2. Keeping up with ingest at full rate.
        if self.throughputSeconds > 0 {
            let published0 = try await Self.counter(http, self.ingestURL, "ingest_events_published_total")
            let applied0 = try await Self.counter(http, self.healthURL, "health_events_applied_total")
            let started = ContinuousClock.now
            let load = IngestLoad(url: self.stack.url, key: key, connections: 4, batch: 100, rate: 1e9, duration: .seconds(self.throughputSeconds))
            let report = try await load.run()
            let elapsed = (ContinuousClock.now - started).secondsDouble
            let published = try await Self.counter(http, self.ingestURL, "ingest_events_published_total") - published0
            let applied = try await Self.counter(http, self.healthURL, "health_events_applied_total") - applied0
            let behind = published - applied
            let ended = ContinuousClock.now
            while try await Self.counter(http, self.healthURL, "health_events_applied_total") - applied0 < published,
                ContinuousClock.now - ended < .seconds(120)
            {
                try await Task.sleep(for: .milliseconds(100))
            }
            let catchUp = (ContinuousClock.now - ended).secondsDouble
            print(
                String(
                    format:
                        "throughput: ingest accepted %.0f events/s (client), published %.0f/s; health-monitor applied %.0f/s in the same %.1f s (ratio %.2f)",
                    report.eventsPerSecond,
                    published / elapsed,
                    applied / elapsed,
                    elapsed,
                    applied / max(published, 1)
                )
            )
            print(String(format: "throughput: %.0f events behind at the end of the load; caught up %.2f s later", behind, catchUp))
        }

        // 3. Memory per session and per tool.
        if self.sessions > 0 {
            guard let pid = Self.healthMonitorPID() else {
                throw ValidationError("no health-monitor process on this machine (the memory phase reads its /proc)")
            }
            let before = try Self.residentBytes(pid)
            let sessions0 = try await Self.counter(http, self.healthURL, "health_sessions")
            try await poster.sessions(swarm: swarm + "-m", count: self.sessions, prefix: "m")
            try await Self.waitForGauge(http, self.healthURL, "health_sessions", atLeast: min(sessions0 + Double(self.sessions), 1))
            try await Task.sleep(for: .seconds(3))
            let afterSessions = try Self.residentBytes(pid)
            try await poster.tools(swarm: swarm + "-m", count: self.tools)
            try await Task.sleep(for: .seconds(3))
            let afterTools = try Self.residentBytes(pid)
            try await poster.sessions(swarm: swarm + "-m", count: self.sessions * 10, prefix: "x")
            try await Task.sleep(for: .seconds(3))
            let afterMany = try Self.residentBytes(pid)
            let held = try await Self.counter(http, self.healthURL, "health_sessions")
            let mib = { (bytes: Int) in Double(bytes) / 1_048_576 }
            print(
                String(
                    format:
                        "memory: health-monitor resident %.1f MiB before; +%d sessions %.1f MiB (%.2f KiB per session); +%d tools %.1f MiB (%.2f KiB per tool)",
                    mib(before),
                    self.sessions,
                    mib(afterSessions),
                    Double(afterSessions - before) / 1024 / Double(self.sessions),
                    self.tools,
                    mib(afterTools),
                    Double(afterTools - afterSessions) / 1024 / Double(max(self.tools, 1))
                )
            )
            print(
                String(
                    format: "memory: +%d more sessions (10×): %.1f MiB resident, %.0f sessions held (the bound drops the least recently active)",
                    self.sessions * 10,
                    mib(afterMany),
                    held
                )
            )
        }
        try await http.shutdown()
    }

    static func frames(_ text: String) -> [[String: Any]] {
        let object = try? JSONSerialization.jsonObject(with: Data(text.utf8))
        if let batch = object as? [[String: Any]] { return batch }
        return (object as? [String: Any]).map { [$0] } ?? []
    }

    /// A counter's or gauge's value on a service's `/metrics` (0 when absent).
    static func counter(_ http: HTTPClient, _ base: String, _ name: String) async throws -> Double {
        try await MetricsPage.fetch(base + "/metrics", http: http).value(name) ?? 0
    }

    static func waitForGauge(_ http: HTTPClient, _ base: String, _ name: String, atLeast value: Double) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while try await Self.counter(http, base, name) < value, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(200)) }
    }

    /// The health-monitor process of this machine (`swarmdeckd health-monitor`).
    static func healthMonitorPID() -> Int32? {
        ProcessCPU.servicePIDs("health-monitor").first
    }

    static func residentBytes(_ pid: Int32) throws -> Int {
        let bytes = Memory.rss(pid)
        guard bytes > 0 else { throw ValidationError("no VmRSS for \(pid)") }
        return bytes
    }
}

/// Posts native batches with the bench's ingest key.
struct EventPoster: Sendable {
    let http: HTTPClient
    let url: String
    let key: String

    func post(_ events: [[String: Any]]) async throws {
        var request = HTTPClientRequest(url: self.url + "/v1/ingest/events")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(self.key)")
        request.headers.add(name: "Content-Type", value: "application/json")
        let stamped = events.map { $0.merging(["msgId": UUID().uuidString]) { old, _ in old } }
        request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["events": stamped])))
        let response = try await self.http.execute(request, timeout: .seconds(30))
        let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
        guard response.status == .accepted || response.status == .ok, body.contains(#""rejected":0"#) || body.contains(#""rejected" : 0"#) else {
            throw ValidationError("ingest answered \(response.status): \(body.prefix(500))")
        }
    }

    /// `count` sessions, one usage event each, 500 per request.
    func sessions(swarm: String, count: Int, prefix: String) async throws {
        for start in stride(from: 0, to: count, by: 500) {
            try await self.post(
                (start..<min(start + 500, count)).map { index in
                    [
                        "kind": "usage", "swarmId": swarm, "agentId": "\(prefix)\(index % 200)", "model": "m", "inputTokens": 1000 + index,
                        "outputTokens": 1, "attrs": ["session.id": "\(swarm)-\(prefix)\(index)"],
                    ]
                }
            )
        }
    }

    /// `count` tools, ten calls each with a latency.
    func tools(swarm: String, count: Int) async throws {
        let calls: [[String: Any]] = (0..<count).flatMap { tool in
            (0..<10).map { call in
                [
                    "kind": "tool_call", "swarmId": swarm, "agentId": "t\(tool % 50)", "tool": "tool-\(tool)", "ok": call != 0,
                    "latencyMs": Double(10 * call + tool),
                ]
            }
        }
        for start in stride(from: 0, to: calls.count, by: 500) { try await self.post(Array(calls[start..<min(start + 500, calls.count)])) }
    }
}

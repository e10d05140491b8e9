import ArgumentParser
import AsyncHTTPClient
import Contracts
import ControlAPIContract
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import ServiceKit
import SwarmdeckTools
import Synchronization

/// `swarmdeck-bench control`: the control round trip on the running stack. Starts `sleep` under the
/// agent connector, subscribes to its state events on `/v1/stream`, then pauses and resumes it
/// N times, timing from the POST to control-api: the 202, the process's state changing in
/// /proc (the connector has acted), and the state event arriving on the stream.
struct ControlBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "control",
        abstract: "Control round trip: POST control → the connector has signalled the process → the state event on /v1/stream."
    )

    @Option(help: "Round trips (alternately pause and resume).")
    var iterations = 200

    @Option(help: "Events/s ingest takes during a second phase, side by side with the first (0: idle only).")
    var loadRate = 0.0

    @OptionGroup var stack: StackBenchOptions

    func run() async throws {
        let key = try self.stack.ingestKey()
        let signer = try await self.stack.signer()
        let agent = "bench-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let connector = Process()
        connector.executableURL = URL(fileURLWithPath: self.stack.swarmdeck)
        connector.arguments = ["agent", "run", "--url", self.stack.url, "--key", key, "--swarm", "bench", "--name", agent, "--", "sleep", "100000"]
        connector.standardError = FileHandle.nullDevice
        connector.standardOutput = FileHandle.nullDevice
        try connector.run()
        defer { if connector.isRunning { kill(connector.processIdentifier, SIGKILL) } }

        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let reader = try await signer.sign(tenant: self.stack.tenant, subject: "bench-reader", scopes: [.streamRead])
        let readerClient = try Client.controlAPI(url: self.stack.url, credential: reader, httpClient: client, timeout: .seconds(10))
        // The agent and its process id (from its task summary).
        var pid: Int32?
        for _ in 0..<200 where pid == nil {
            if case .ok(let answer) = try await readerClient.getAgent(path: .init(agentId: agent)),
                let summary = try answer.body.json.taskSummary, summary.hasPrefix("pid ")
            {
                pid = Int32(summary.dropFirst(4).prefix { $0.isNumber })
            } else {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        guard let pid else { throw ValidationError("the agent never appeared in control-api") }

        let arrivals = Arrivals()
        let streamURL =
            self.stack.url.replacingOccurrences(of: "http", with: "ws", options: .anchored) + "/v1/stream?protocol=1"
        let subscribe = StreamClientMessage(type: "subscribe", requestId: "bench", filters: .init(agentIds: [agent], include: ["states"])).json
        let stream = Task {
            try await WebSocketClient.connect(url: streamURL, configuration: .bearer(reader), logger: Logger(label: "control-bench")) {
                inbound,
                outbound,
                _ in
                try await outbound.write(.text(subscribe))
                for try await frame in inbound.messages(maxSize: 1 << 20) {
                    guard case .text(let text) = frame else { continue }
                    if text.contains(#""type":"subscribed""#) { arrivals.subscribed() }
                    if let range = text.range(of: #""commandId":""#) {
                        let id = text[range.upperBound...].prefix { $0 != "\"" }
                        arrivals.arrived(String(id))
                    }
                }
            }
        }
        defer { stream.cancel() }
        while !arrivals.isSubscribed { try await Task.sleep(for: .milliseconds(10)) }

        let rounds = RoundTrips(agent: agent, pid: pid, arrivals: arrivals) { batch in
            let token = try await signer.sign(tenant: self.stack.tenant, subject: "\(agent)-\(batch)", scopes: [.agentsControl])
            return try Client.controlAPI(url: self.stack.url, credential: token, httpClient: client, timeout: .seconds(10))
        }
        print("control-bench: \(self.iterations) round trips per phase on agent \(agent) (pid \(pid)) via \(self.stack.url)")
        var phases = [("idle", try await rounds.measure(self.iterations, until: nil))]
        if self.loadRate > 0 {
            let (loaded, report) = try await IngestLoad.during(
                url: self.stack.url,
                key: key,
                rate: self.loadRate,
                seconds: Double(self.iterations) * 0.1 + 12
            ) {
                deadline in
                try await rounds.measure(self.iterations, until: deadline)
            }
            phases.append((String(format: "ingest %.0f events/s", report.eventsPerSecond), loaded))
        }
        let control = try await rounds.controller(-1)
        _ = try? await control.controlAgent(
            path: .init(agentId: agent),
            body: .json(.init(action: .terminate, reason: "bench done", requestId: "\(agent)-end", confirm: "TERMINATE"))
        )
        connector.waitUntilExit()
        try await client.shutdown()
        for (phase, measured) in phases {
            print(GateBench.line("\(phase): POST → 202", measured.accepted))
            print(GateBench.line("\(phase): POST → process signalled", measured.acted))
            print(GateBench.line("\(phase): POST → state event on stream", measured.delivered))
        }
    }

    static func processState(_ pid: Int32) -> Character? {
        ProcessTree.state(of: pid)
    }
}

/// Pause and resume round trips on one agent, timed three ways.
struct RoundTrips: Sendable {
    let agent: String
    let pid: Int32
    let arrivals: Arrivals
    /// A control-api client with a fresh actor's token (the per-actor rate limit).
    let controller: @Sendable (Int) async throws -> Client
    private let counter = BenchSequence()

    init(agent: String, pid: Int32, arrivals: Arrivals, controller: @escaping @Sendable (Int) async throws -> Client) {
        self.agent = agent
        self.pid = pid
        self.arrivals = arrivals
        self.controller = controller
    }

    /// `count` round trips (or as many as fit before `deadline`): POST → 202, → the process's
    /// state in /proc, → the state event on the stream.
    func measure(
        _ count: Int,
        until deadline: ContinuousClock.Instant?
    ) async throws -> (accepted: [Duration], acted: [Duration], delivered: [Duration]) {
        var accepted: [Duration] = []
        var acted: [Duration] = []
        var delivered: [Duration] = []
        var control: Client?
        for _ in 0..<count {
            if let deadline, ContinuousClock.now > deadline { break }
            let iteration = self.counter.next()
            if control == nil || iteration % 50 == 0 { control = try await self.controller(iteration / 50) }
            let pause = iteration % 2 == 0
            let expected: Character = pause ? "T" : "S"
            let started = ContinuousClock.now
            let pid = self.pid
            let watcher = Task { () -> Duration? in
                // /proc at ~2 kHz: when the connector's signal has landed.
                while !Task.isCancelled {
                    if ControlBench.processState(pid) == expected { return ContinuousClock.now - started }
                    try? await Task.sleep(for: .microseconds(500))
                }
                return nil
            }
            let request = Components.Schemas.ControlRequest(
                action: pause ? .pause : .resume,
                reason: "bench",
                requestId: "\(self.agent)-\(iteration)"
            )
            let command: String
            switch try await control!.controlAgent(path: .init(agentId: self.agent), body: .json(request)) {
            case .accepted(let answer):
                guard let first = try answer.body.json.commands.first?.commandId else { throw ValidationError("the control issued no command") }
                command = first
            case .default(let status, let error):
                watcher.cancel()
                throw ControlAPIClientError(status: status, error)
            }
            accepted.append(ContinuousClock.now - started)
            let arrived = try await self.arrivals.wait(for: command, timeout: .seconds(10))
            delivered.append(arrived - started)
            if let act = await watcher.value { acted.append(act) }
            watcher.cancel()
        }
        return (accepted, acted, delivered)
    }
}

/// When each awaited frame arrived on the stream, by key (a command's state event, a session's
/// incident).
final class Arrivals: Sendable {
    private let state = Mutex<(subscribed: Bool, times: [String: ContinuousClock.Instant])>((false, [:]))

    var isSubscribed: Bool { self.state.withLock { $0.subscribed } }

    func subscribed() { self.state.withLock { $0.subscribed = true } }

    func arrived(_ command: String) {
        let now = ContinuousClock.now
        self.state.withLock { state in
            if state.times[command] == nil { state.times[command] = now }
        }
    }

    func wait(for command: String, timeout: Duration) async throws -> ContinuousClock.Instant {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let time = self.state.withLock({ $0.times[command] }) { return time }
            try await Task.sleep(for: .microseconds(200))
        }
        throw ValidationError("nothing arrived on the stream for \(command)")
    }
}

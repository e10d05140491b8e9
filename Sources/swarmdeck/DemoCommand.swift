import ArgumentParser
import AsyncHTTPClient
import Contracts
import Foundation
import NIOCore
import OTLP
import SwarmdeckTools

/// `swarmdeck demo`: demo traffic for the local stack. A few simulated agents in two swarms
/// post what real ones do: state heartbeats, logs, tool calls and token use through the native
/// API, and one Claude-Code-shaped agent through OTLP/HTTP. Runs until stopped.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Demo traffic: simulated agents posting to ingest (native and OTLP) until stopped."
    )

    @Option(help: "Base URL of ingest or the edge.")
    var url = "http://127.0.0.1:8080"

    @Option(help: "Ingest key (default: $SWARMDECK_INGEST_KEY).")
    var key: String?

    @Option(help: "Simulated native agents (plus one over OTLP).")
    var agents = 6

    @Option(help: "Seconds between an agent's posts.")
    var interval = 2.0

    @Option(help: "Seconds to run; 0 = until stopped.")
    var duration = 0.0

    func validate() throws {
        guard (1...1000).contains(self.agents), (0.05...3600).contains(self.interval), self.duration >= 0 else {
            throw ValidationError("agents 1…1000, interval 0.05…3600 s, duration ≥ 0")
        }
    }

    func run() async throws {
        let key = try IngestTargetOptions.ingestKey(self.key)
        let client = ClientTrust.httpClient()
        let run = String(UInt64.random(in: 0..<UInt64.max), radix: 36)
        let deadline = self.duration > 0 ? ContinuousClock.now + .seconds(self.duration) : nil
        var simulated = (0..<self.agents).map { DemoAgent(index: $0, run: run) }
        var claude = DemoClaudeAgent(run: run)
        var sent = 0
        var failures: [String: Int] = [:]
        var lastReport = ContinuousClock.now
        Self.say("demo: \(self.agents) agents in swarms checkout and search, plus claude-demo over OTLP, every \(self.interval) s to \(self.url)")
        while deadline.map({ ContinuousClock.now < $0 }) ?? true {
            let tick = ContinuousClock.now
            var requests: [(String, String, ByteBuffer, Int)] = []
            for index in simulated.indices {
                let events = simulated[index].next()
                requests.append(
                    (
                        "/v1/ingest/events", "application/json", ByteBuffer(bytes: try JSONEncoder().encode(IngestBatch(events: events))),
                        events.count
                    )
                )
            }
            let (export, count) = try claude.next()
            requests.append(("/v1/logs", "application/x-protobuf", export, count))
            for (path, contentType, body, count) in requests {
                var request = HTTPClientRequest(url: self.url + path)
                request.method = .POST
                request.headers.add(name: "Authorization", value: "Bearer \(key)")
                request.headers.add(name: "Content-Type", value: contentType)
                request.body = .bytes(body)
                do {
                    let response = try await client.execute(request, timeout: .seconds(10))
                    _ = try await response.body.collect(upTo: 1 << 20)
                    if response.status == .ok {
                        sent += count
                    } else {
                        failures["HTTP \(response.status.code)", default: 0] += 1
                    }
                } catch {
                    failures["\(type(of: error))", default: 0] += 1
                }
            }
            if ContinuousClock.now - lastReport >= .seconds(60) {
                Self.say("demo: \(sent) events accepted so far; failures: \(failures.isEmpty ? "none" : "\(failures)")")
                lastReport = ContinuousClock.now
            }
            try await Task.sleep(until: tick + .seconds(self.interval))
        }
        Self.say("demo: \(sent) events accepted; failures: \(failures.isEmpty ? "none" : "\(failures)")")
        try await client.shutdown()
    }

    /// A line on stdout, unbuffered: when the stack runs it, stdout is a log file.
    private static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// One simulated agent: works through tasks, calling tools, spending tokens, now and then
/// failing or waiting for approval.
struct DemoAgent {
    let id: String
    let swarm: String
    let run: String
    private var counter = 0
    private var task = 0

    static let tasks = [
        "fix flaky checkout test", "add retry to payment client", "index search results", "upgrade pagination", "write release notes",
    ]
    static let tools = ["bash", "read_file", "edit_file", "grep", "run_tests"]

    init(index: Int, run: String) {
        self.id = "agent-\(index + 1)"
        self.swarm = index % 2 == 0 ? "checkout" : "search"
        self.run = run
    }

    private mutating func base(_ kind: String) -> IngestEvent {
        self.counter += 1
        return IngestEvent(kind: kind, msgId: "demo-\(self.run)-\(self.id)-\(self.counter)", swarmId: self.swarm, agentId: self.id)
    }

    /// The next few events.
    mutating func next() -> [IngestEvent] {
        var events: [IngestEvent] = []
        let roll = Int.random(in: 0..<10)
        var state = self.base("state")
        state.state = roll == 0 ? "waiting_approval" : "running"
        state.taskSummary = Self.tasks[self.task % Self.tasks.count]
        events.append(state)
        let tool = Self.tools.randomElement()!
        let ok = roll != 9
        var call = self.base("tool_call")
        call.tool = tool
        call.ok = ok
        call.latencyMs = Double.random(in: 5...2000).rounded()
        if !ok { call.error = "exit status 1" }
        events.append(call)
        var log = self.base("log")
        log.level = ok ? "info" : "error"
        log.message = ok ? "\(tool) finished" : "\(tool) failed; retrying"
        events.append(log)
        if roll % 3 == 0 {
            var usage = self.base("usage")
            usage.model = "claude-sonnet-4-5"
            let input = Int64.random(in: 500...8000)
            let output = Int64.random(in: 50...1200)
            usage.inputTokens = input
            usage.outputTokens = output
            usage.costUsd = (Double(input) * 3 + Double(output) * 15) / 1_000_000
            events.append(usage)
            self.task += 1
        }
        return events
    }
}

/// A Claude-Code-shaped agent over OTLP/HTTP logs: `tool_result` and `api_request` events as
/// its exporter sends them.
struct DemoClaudeAgent {
    let run: String
    private var counter: UInt64 = 0

    init(run: String) {
        self.run = run
    }

    mutating func next() throws -> (ByteBuffer, Int) {
        let now = UInt64(Date().timeIntervalSince1970 * 1_000_000_000)
        self.counter += 1
        func record(_ name: String, _ attributes: [OTLPKeyValue]) -> OTLPLogRecord {
            var record = OTLPLogRecord()
            record.timeUnixNano = now + self.counter
            record.body.stringValue = "claude_code.\(name)"
            record.attributes =
                [
                    OTLPKeyValue("event.name", name), OTLPKeyValue("session.id", "claude-demo-\(self.run)"),
                    OTLPKeyValue("event.sequence", Int64(self.counter)),
                ] + attributes
            return record
        }
        var scope = Opentelemetry_Proto_Logs_V1_ScopeLogs()
        scope.scope.name = "com.anthropic.claude_code.events"
        scope.logRecords = [
            record(
                "tool_result",
                [
                    OTLPKeyValue("tool_name", ["Bash", "Read", "Edit", "Grep"].randomElement()!),
                    OTLPKeyValue("success", Bool.random() ? "true" : "false"),
                    OTLPKeyValue("duration_ms", String(Int.random(in: 10...3000))),
                ]
            ),
            record(
                "api_request",
                [
                    OTLPKeyValue("model", "claude-sonnet-4-5"), OTLPKeyValue("input_tokens", String(Int.random(in: 1000...20000))),
                    OTLPKeyValue("output_tokens", String(Int.random(in: 100...2000))),
                    OTLPKeyValue("cost_usd", String(Double.random(in: 0.001...0.05))),
                ]
            ),
        ]
        var resourceLogs = Opentelemetry_Proto_Logs_V1_ResourceLogs()
        resourceLogs.resource.attributes = [
            OTLPKeyValue("service.name", "claude-code"), OTLPKeyValue("swarmdeck.swarm.id", "checkout"),
            OTLPKeyValue("swarmdeck.agent.id", "claude-demo"),
        ]
        resourceLogs.scopeLogs = [scope]
        var export = OTLPExportLogsRequest()
        export.resourceLogs = [resourceLogs]
        return (ByteBuffer(bytes: try export.serializedBytes() as [UInt8]), scope.logRecords.count)
    }
}

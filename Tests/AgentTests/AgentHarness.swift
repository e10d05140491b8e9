import AnthropicLocal
import Approvals
import Contracts
import ControlAPI
import Foundation
import HealthMonitor
import Hummingbird
import HummingbirdTesting
import Ingest
import Logging
import ServiceKit
import SwarmdeckTools
import TestSupport
import Testing

/// Ingest, control-api, approvals and health-monitor live on ports of their own against the test
/// NATS and Postgres (``LiveHarness``), with anthropic-local, for a real agent run by the real
/// connector. Health samples every second and evaluates every 200 ms.
struct AgentHarness {
    typealias JSON = [String: Any]

    var live: LiveHarness
    var tenant: String { self.live.tenant }

    /// The services' clients and ports.
    struct Services: Sendable {
        var ingest: any TestClientProtocol
        var control: any TestClientProtocol
        var approvals: any TestClientProtocol
        var health: any TestClientProtocol
        var provider: AnthropicLocalServer
        var key: String

        /// The connector's options that point it at these services (the key goes in its
        /// environment, as docs/agents.md says: ``connectorEnvironment``).
        var connectorOptions: [String] {
            [
                "--ingest-url", "http://127.0.0.1:\(self.ingest.port!)", "--control-url", "http://127.0.0.1:\(self.control.port!)",
                "--approvals-url", "http://127.0.0.1:\(self.approvals.port!)",
            ]
        }

        /// The test process's environment without OTEL or Swarmdeck variables, with the ingest
        /// key for the connector.
        var connectorEnvironment: [String: String] {
            var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OTEL_") && !$0.key.hasPrefix("SWARMDECK_") }
            environment["SWARMDECK_INGEST_KEY"] = self.key
            return environment
        }
    }

    init(_ overrides: [String: String] = [:]) async throws {
        let fast = [
            "HEALTH_SAMPLE_SECONDS": "1", "HEALTH_ROLLUP_SECONDS": "1", "HEALTH_EVALUATE_MILLISECONDS": "200", "HEALTH_METRIC_SECONDS": "1",
        ]
        self.live = try await LiveHarness(overrides: fast.merging(overrides) { $1 })
    }

    func run(_ body: @escaping @Sendable (Services) async throws -> Void) async throws {
        let provider = try await AnthropicLocalServer.start(logger: Logger(label: "anthropic-local", factory: { _ in SwiftLogNoOpLogHandler() }))
        defer { Task { await provider.stop() } }
        try await self.live.withStack([IngestService.self, ControlAPIService.self, ApprovalsService.self, HealthMonitorService.self], .live) {
            stack in
            let key = try await self.live.createKey(stack[IngestService.self])
            try await body(
                Services(
                    ingest: stack[IngestService.self],
                    control: stack[ControlAPIService.self],
                    approvals: stack[ApprovalsService.self],
                    health: stack[HealthMonitorService.self],
                    provider: provider,
                    key: key
                )
            )
        }
    }

    /// An operator's token: decide gates, control agents, read health.
    func operatorToken() async throws -> String {
        try await self.live.token(subject: "operator", scopes: [.streamRead, .agentsControl, .approvalsDecide])
    }

    static func get(_ client: any TestClientProtocol, _ path: String, token: String) async throws -> JSON {
        let (status, body) = try await LiveCall.call(client, .get, path, token: token)
        #expect(status == .ok, "GET \(path): \(status) \(body)")
        return body
    }

    /// Waits (up to `timeout`) until `probe` answers non-nil.
    static func waitFor<T>(_ what: String, timeout: Duration = .seconds(60), _ probe: () async throws -> T?) async throws -> T {
        var found: T?
        _ = try await eventually(timeout: timeout) {
            found = try await probe()
            return found != nil
        }
        return try #require(found, "timed out waiting for \(what)")
    }

    /// The pending gate of `agent`.
    static func pendingGate(_ approvals: any TestClientProtocol, token: String, agent: String) async throws -> JSON {
        try await Self.waitFor("a pending gate of \(agent)") {
            let page = try await Self.get(approvals, "/v1/approval-gates?status=pending", token: token)
            return (page["gates"] as? [JSON])?.first { $0["agentId"] as? String == agent }
        }
    }

    /// The pending gate of `agent` other than `previous`, once it is opened.
    static func nextPendingGate(_ approvals: any TestClientProtocol, token: String, agent: String, after previous: String) async throws -> JSON {
        try await Self.waitFor("a gate of \(agent) after \(previous)") {
            let gate = try await Self.pendingGate(approvals, token: token, agent: agent)
            return gate["gateId"] as? String == previous ? nil : gate
        }
    }

    /// Approves `agent`'s first gate, then rejects its next with `reason`; answers the two gates.
    @discardableResult
    static func approveThenReject(_ services: Services, token: String, agent: String, reason: String) async throws -> (first: JSON, second: JSON) {
        let first = try await Self.pendingGate(services.approvals, token: token, agent: agent)
        let firstID = try #require(first["gateId"] as? String)
        try await Self.decide(services.approvals, token: token, gate: firstID, ["decision": "approve"])
        let second = try await Self.nextPendingGate(services.approvals, token: token, agent: agent, after: firstID)
        try await Self.decide(
            services.approvals,
            token: token,
            gate: try #require(second["gateId"] as? String),
            ["decision": "reject", "reason": reason]
        )
        return (first, second)
    }

    static func decide(_ approvals: any TestClientProtocol, token: String, gate: String, _ decision: JSON) async throws {
        let (status, body) = try await LiveCall.call(approvals, .post, "/v1/approval-gates/\(gate)/decision", token: token, json: decision)
        #expect(status == .ok, "deciding \(gate): \(status) \(body)")
    }

    /// Waits for what `agent`'s telemetry makes of it in health-monitor: a session of at least
    /// `contextTokens` in `swarm`, a skill named `skill` (any, when nil) with a call, and a
    /// `context_near_capacity` incident of the agent; answers the session.
    @discardableResult
    static func expectHealth(
        _ services: Services,
        token: String,
        swarm: String,
        agent: String,
        contextTokens: Int,
        skill: String?
    ) async throws -> JSON {
        let session = try await Self.waitFor("the context health of \(agent)") {
            let page = try await Self.get(services.health, "/v1/context-health?agentId=\(agent)", token: token)
            return (page["sessions"] as? [JSON])?.first { ($0["tokenUsage"] as? Int ?? 0) >= contextTokens }
        }
        #expect(session["swarmId"] as? String == swarm)
        let found = try await Self.waitFor("the \(skill ?? "first") skill of \(swarm)") {
            let page = try await Self.get(services.health, "/v1/skill-health?swarmId=\(swarm)", token: token)
            return (page["skills"] as? [JSON])?.first { (skill == nil || $0["name"] as? String == skill) && ($0["calls"] as? Int ?? 0) >= 1 }
        }
        #expect(found["swarmId"] as? String == swarm, "\(found)")
        let incident = try await Self.waitFor("the context incident of \(agent)") {
            let page = try await Self.get(services.health, "/v1/incidents?status=all", token: token)
            return (page["incidents"] as? [JSON])?.first { $0["rule"] as? String == "context_near_capacity" && $0["swarmId"] as? String == swarm }
        }
        #expect(incident["agentId"] as? String == agent, "\(incident)")
        return session
    }

    /// Pauses `agent` once its process has made two scripted provider requests: its whole tree
    /// must stop (state T) and make no request for 4 s; resumes it: it must go on; terminates
    /// it: the connector must exit and no process of the tree be left.
    static func pauseResumeTerminate(_ services: Services, token: String, agent: String, process: Process, output: URL) async throws {
        let scripted = { services.provider.requests().count { $0.scriptStep != nil } }
        _ = try await Self.waitFor("the agent's second request") { scripted() >= 2 ? true : nil }

        try await Self.control(services.control, token: token, agent: agent, action: "pause")
        // SIGSTOP takes effect when a process next leaves the kernel: one in uninterruptible sleep
        // (state D, reading its script from a disk the staging smoke's image build keeps busy)
        // stopped only after 15 s once, so the wait is 30 s.
        let stopped = await eventually(timeout: .seconds(30)) {
            let tree = ProcessTree.descendants(of: process.processIdentifier)
            // Stopped, or already exited (a zombie its stopped parent has not reaped yet).
            return !tree.isEmpty && tree.values.allSatisfy { $0 == "T" || $0 == "Z" }
        }
        let tree = ProcessTree.descendants(of: process.processIdentifier)
        #expect(stopped, "paused, yet running: \(tree)")
        // A request the agent wrote to its socket just before it stopped still reaches the
        // provider (a fresh-clone run counted one such, 4 against 3): the paused count is taken
        // once no request has arrived for 1 s, which must happen within 10 s.
        var requestsWhenPaused = scripted()
        var changedAt = ContinuousClock.now
        let settled = await eventually(timeout: .seconds(10)) {
            let count = scripted()
            if count != requestsWhenPaused {
                requestsWhenPaused = count
                changedAt = ContinuousClock.now
            }
            return ContinuousClock.now - changedAt >= .seconds(1)
        }
        #expect(settled, "the provider requests of a paused agent never settled: \(requestsWhenPaused)")
        try await Task.sleep(for: .seconds(4))
        #expect(scripted() == requestsWhenPaused, "a provider request while paused")

        try await Self.control(services.control, token: token, agent: agent, action: "resume")
        _ = try await Self.waitFor("a provider request after resume", timeout: .seconds(30)) { scripted() > requestsWhenPaused ? true : nil }

        let everyProcess = Set(ProcessTree.descendants(of: process.processIdentifier).keys).union(tree.keys)
        try await Self.control(services.control, token: token, agent: agent, action: "terminate")
        let status = await RealAgent.exit(of: process, timeout: .seconds(30))
        #expect(status != nil, "the connector did not exit: \((try? String(contentsOf: output, encoding: .utf8)) ?? "")")
        let left = await eventually(timeout: .seconds(10)) { !everyProcess.contains { ProcessTree.alive($0) } }
        #expect(left, "still running after terminate: \(everyProcess.filter { ProcessTree.alive($0) })")
    }

    static func control(_ control: any TestClientProtocol, token: String, agent: String, action: String) async throws {
        var body: JSON = ["action": action, "reason": "test", "requestId": "\(action)-\(UUID().uuidString)"]
        if action == "terminate" { body["confirm"] = "TERMINATE" }
        let (status, answer) = try await LiveCall.call(control, .post, "/v1/agents/\(agent)/control", token: token, json: body)
        #expect(status == .accepted || status == .ok, "\(action) \(agent): \(status) \(answer)")
    }
}

/// The real agents, installed by the test command (scripts/lib/common.sh `ensure_real_agents`).
enum RealAgent {
    /// The Claude Code CLI (`$SWARMDECK_CLAUDE_BIN`).
    static func claude() throws -> String {
        guard let path = ProcessInfo.processInfo.environment["SWARMDECK_CLAUDE_BIN"], FileManager.default.isExecutableFile(atPath: path) else {
            throw HarnessError(message: "SWARMDECK_CLAUDE_BIN names no Claude Code CLI: run the tests through ./scripts/test, which installs it")
        }
        return path
    }

    /// The Codex CLI (`$SWARMDECK_CODEX_BIN`).
    static func codex() throws -> String {
        guard let path = ProcessInfo.processInfo.environment["SWARMDECK_CODEX_BIN"], FileManager.default.isExecutableFile(atPath: path) else {
            throw HarnessError(message: "SWARMDECK_CODEX_BIN names no Codex CLI: run the tests through ./scripts/test, which installs it")
        }
        return path
    }

    /// A scratch project for Codex: `work` with `.codex/hooks.json` holding the PreToolUse hook
    /// of docs/agents.md, and a `CODEX_HOME` whose config.toml points Codex at `provider`'s
    /// Responses API.
    static func codexProject(provider: String, gated: Bool = true) throws -> (work: URL, home: URL) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("codex-\(UUID().uuidString)")
        let work = root.appendingPathComponent("work")
        let home = root.appendingPathComponent("codex-home")
        try FileManager.default.createDirectory(at: work.appendingPathComponent(".codex"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let hooks: [String: Any] = [
            "hooks": [
                "PreToolUse": [
                    [
                        "matcher": "Bash",
                        "hooks": [["type": "command", "command": "\(Self.swarmdeck) approve hook --deadline-seconds 590", "timeout": 600]],
                    ]
                ]
            ]
        ]
        if gated { try JSONSerialization.data(withJSONObject: hooks).write(to: work.appendingPathComponent(".codex/hooks.json")) }
        let config = """
            model = "local-model"
            model_provider = "local"

            [model_providers.local]
            name = "anthropic-local"
            base_url = "\(provider)/v1"
            wire_api = "responses"
            env_key = "LOCAL_PROVIDER_KEY"
            stream_max_retries = 1
            """
        try Data(config.utf8).write(to: home.appendingPathComponent("config.toml"))
        return (work, home)
    }

    /// Starts `swarmdeck agent run … -- codex exec PROMPT` in `project` as docs/agents.md says.
    static func startCodex(
        _ services: AgentHarness.Services,
        swarm: String,
        agent: String,
        project: (work: URL, home: URL),
        prompt: String
    ) throws -> (process: Process, output: URL) {
        var environment = services.connectorEnvironment
        environment["CODEX_HOME"] = project.home.path
        environment["LOCAL_PROVIDER_KEY"] = "sk-local-codex"
        return try Self.launch(
            services,
            swarm: swarm,
            agent: agent,
            in: project.work,
            command: [
                try Self.codex(), "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", "--dangerously-bypass-hook-trust", prompt,
            ],
            environment: environment
        )
    }

    /// The `swarmdeck` executable built beside the test bundle.
    static var swarmdeck: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("swarmdeck").path
    }

    /// A scratch project for an agent: `work` (with `.claude/settings.json` holding the
    /// PreToolUse hook of docs/agents.md when `gated`, and Bash allowed unless `allowBash` is
    /// false) and a `home` of its own.
    /// The hook's `timeout` docs/agents.md gives Claude Code: a day, so its timer (which runs on
    /// while the agent is paused) never ends the hook, which answers by its own deadline.
    static let hookTimeout = 86_400

    static func project(gated: Bool, allowBash: Bool = true, hookDeadline: Int = 590) throws -> (work: URL, home: URL) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("agent-\(UUID().uuidString)")
        let work = root.appendingPathComponent("work")
        let home = root.appendingPathComponent("home")
        try FileManager.default.createDirectory(at: work.appendingPathComponent(".claude"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        var settings: [String: Any] =
            gated
            ? [
                "hooks": [
                    "PreToolUse": [
                        [
                            "matcher": "Bash",
                            "hooks": [
                                [
                                    "type": "command", "command": "\(Self.swarmdeck) approve hook --deadline-seconds \(hookDeadline)",
                                    "timeout": Self.hookTimeout,
                                ]
                            ],
                        ]
                    ]
                ],
                "permissions": ["allow": ["Bash"]],
            ] : ["permissions": ["allow": ["Bash"]]]
        if !allowBash { settings["permissions"] = nil }
        try JSONSerialization.data(withJSONObject: settings, options: [.prettyPrinted]).write(
            to: work.appendingPathComponent(".claude/settings.json")
        )
        // Claude Code ignores a project's permissions until its folder is trusted (once, by a
        // person, in its home).
        let state = ["projects": [work.path: ["hasTrustDialogAccepted": true]]]
        try JSONSerialization.data(withJSONObject: state).write(to: home.appendingPathComponent(".claude.json"))
        return (work, home)
    }

    /// A prompt holding `steps` as anthropic-local's script.
    static func prompt(_ task: String, steps: [[String: Any]]) throws -> String {
        let script = String(decoding: try JSONSerialization.data(withJSONObject: steps, options: [.sortedKeys]), as: UTF8.self)
        return "\(task)\n\(AnthropicLocalScript.openTag)\(script)\(AnthropicLocalScript.closeTag)"
    }

    /// Starts `swarmdeck agent run … -- claude -p PROMPT` in `project` as docs/agents.md says:
    /// the provider's URL and key, a home of its own, and nothing about telemetry.
    static func startClaude(
        _ services: AgentHarness.Services,
        swarm: String,
        agent: String,
        project: (work: URL, home: URL),
        prompt: String,
        extra: [String] = []
    ) throws -> (process: Process, output: URL) {
        var environment = services.connectorEnvironment
        environment["HOME"] = project.home.path
        environment["ANTHROPIC_BASE_URL"] = services.provider.baseURL
        environment["ANTHROPIC_API_KEY"] = "sk-local-test"
        environment["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
        return try Self.launch(
            services,
            swarm: swarm,
            agent: agent,
            in: project.work,
            command: [try Self.claude(), "-p", prompt, "--model", "claude-sonnet-4-5", "--output-format", "json"] + extra,
            environment: environment
        )
    }

    /// Starts `swarmdeck agent run … -- COMMAND` in `folder`, its output in `agent.out` beside it.
    static func launch(
        _ services: AgentHarness.Services,
        swarm: String,
        agent: String,
        in folder: URL,
        command: [String],
        options: [String] = [],
        environment: [String: String]
    ) throws -> (process: Process, output: URL) {
        let output = folder.deletingLastPathComponent().appendingPathComponent("agent.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.swarmdeck)
        process.currentDirectoryURL = folder
        process.arguments = ["agent", "run"] + services.connectorOptions + options + ["--swarm", swarm, "--name", agent, "--"] + command
        process.environment = environment
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return (process, output)
    }

    /// Waits for `process` to exit (up to `timeout`); its status, or nil if it did not.
    static func exit(of process: Process, timeout: Duration = .seconds(60)) async -> Int32? {
        let ended = await eventually(timeout: timeout) { !process.isRunning }
        return ended ? process.terminationStatus : nil
    }
}

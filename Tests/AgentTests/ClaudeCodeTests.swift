import AnthropicLocal
import Foundation
import TestSupport
import Testing

/// The real Claude Code CLI (from PyPI's claude-agent-sdk) under the real connector, set up only
/// as docs/agents.md says, against anthropic-local scripted to call its tools.
@Suite("Claude Code for real: watched, gated and steered under swarmdeck agent run (live)")
struct ClaudeCodeTests {
    typealias JSON = [String: Any]
    typealias H = AgentHarness

    @Test("its telemetry is the agent's context, skill health and cost; approve runs the tool, reject refuses it with the reason")
    func telemetryAndGates() async throws {
        let harness = try await AgentHarness()
        try await harness.run { services in
            let token = try await harness.operatorToken()
            let swarm = "cc-\(UUID().uuidString.prefix(8))"
            let agent = "claude-\(UUID().uuidString.prefix(8))"
            let project = try RealAgent.project(gated: true)
            let prompt = try RealAgent.prompt(
                "Tidy the build.",
                steps: [
                    ["tool": "Bash", "input": ["command": "echo yes > approved.txt", "description": "note approval"]],
                    ["tool": "Bash", "input": ["command": "echo no > rejected.txt", "description": "note rejection"]],
                    // The last request reports a context near a 200K window: 150K + 30K cached.
                    ["text": "Finished.", "usage": ["input_tokens": 150_000, "cache_read_input_tokens": 30_000, "output_tokens": 3]],
                ]
            )
            let (claude, output) = try RealAgent.startClaude(services, swarm: swarm, agent: agent, project: project, prompt: prompt)
            defer { if claude.isRunning { claude.terminate() } }

            let (first, _) = try await H.approveThenReject(services, token: token, agent: agent, reason: "not on a Friday")
            #expect(first["tool"] as? String == "Bash")
            #expect((first["summary"] as? String)?.contains("echo yes > approved.txt") == true, "\(first)")
            let status = await RealAgent.exit(of: claude, timeout: .seconds(90))
            let log = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            #expect(status == 0, "the connector: \(String(describing: status))\n\(log)")
            #expect(log.contains("telemetry relay: "), "\(log)")
            #expect(FileManager.default.fileExists(atPath: project.work.appendingPathComponent("approved.txt").path))
            #expect(!FileManager.default.fileExists(atPath: project.work.appendingPathComponent("rejected.txt").path))
            // The refusal's reason reached Claude Code: it sent it back as the tool's result.
            let requests = services.provider.requests().filter { $0.scriptStep != nil }
            #expect(requests.compactMap(\.toolUse) == ["Bash", "Bash"])
            let results = requests.flatMap(\.toolResults)
            #expect(results.contains { $0.contains("not on a Friday") }, "\(results)")

            // Its telemetry, through the relay: the session's context, the Bash skill, the cost.
            let session = try await H.expectHealth(services, token: token, swarm: swarm, agent: agent, contextTokens: 180_000, skill: "Bash")
            #expect(session["maxTokens"] as? Int == 200_000, "\(session)")
            let cost = try await H.waitFor("the cost of \(swarm)") {
                let page = try await H.get(services.health, "/v1/swarm-health", token: token)
                let entry = (page["swarms"] as? [JSON])?.first { $0["swarmId"] as? String == swarm }
                return (entry?["costPerHourUsd"] as? Double).flatMap { $0 > 0 ? $0 : nil }
            }
            #expect(cost > 0)
        }
    }
}

extension ClaudeCodeTests {
    @Test("pause stops the whole process tree and its provider requests; resume goes on; terminate leaves no process of the tree")
    func pauseResumeTerminate() async throws {
        let harness = try await AgentHarness()
        try await harness.run { services in
            let token = try await harness.operatorToken()
            let agent = "claude-\(UUID().uuidString.prefix(8))"
            let project = try RealAgent.project(gated: false)
            let steps: [[String: Any]] = (1...12).map { step in
                ["tool": "Bash", "input": ["command": "sleep 1; echo step-\(step) >> steps.txt", "description": "step \(step)"]]
            }
            let (claude, output) = try RealAgent.startClaude(
                services,
                swarm: "cc-control",
                agent: agent,
                project: project,
                prompt: try RealAgent.prompt("Count slowly.", steps: steps)
            )
            defer { if claude.isRunning { claude.terminate() } }
            try await H.pauseResumeTerminate(services, token: token, agent: agent, process: claude, output: output)
        }
    }
}

extension ClaudeCodeTests {
    /// Claude Code under the documented hook (its deadline shortened to 8 s) asks to run a Bash
    /// step writing `file`; `meanwhile` runs once the gate is pending. Expects the tool refused
    /// (no file) and Claude Code gone on to its next step; answers the gate and what the provider
    /// was asked.
    static func refusedBashStep(
        _ services: AgentHarness.Services,
        token: String,
        swarm: String,
        file: String,
        meanwhile: (_ agent: String) async throws -> Void = { _ in }
    ) async throws -> (gate: JSON, requests: [AnthropicLocalServer.RecordedRequest]) {
        let agent = "claude-\(UUID().uuidString.prefix(8))"
        let project = try RealAgent.project(gated: true, hookDeadline: 8)
        let prompt = try RealAgent.prompt(
            "Clean up.",
            steps: [["tool": "Bash", "input": ["command": "echo ran > \(file)"]], ["text": "Stopped."]]
        )
        let (claude, output) = try RealAgent.startClaude(services, swarm: swarm, agent: agent, project: project, prompt: prompt)
        defer { if claude.isRunning { claude.terminate() } }
        let gate = try await H.pendingGate(services.approvals, token: token, agent: agent)
        try await meanwhile(agent)
        let status = await RealAgent.exit(of: claude, timeout: .seconds(60))
        #expect(status == 0, "\((try? String(contentsOf: output, encoding: .utf8)) ?? "")")
        #expect(!FileManager.default.fileExists(atPath: project.work.appendingPathComponent(file).path), "the tool ran")
        let requests = services.provider.requests().filter { $0.scriptStep != nil }
        #expect(requests.last?.scriptStep == 1, "Claude Code did not go on after the refusal")
        return (gate, requests)
    }

    @Test("a gate nobody decides expires before the hook's deadline: Claude Code is refused the tool and goes on")
    func expiry() async throws {
        let harness = try await AgentHarness()
        try await harness.run { services in
            let token = try await harness.operatorToken()
            // The hook waits 8 s; its gate expires 5 s before that.
            let (gate, requests) = try await Self.refusedBashStep(services, token: token, swarm: "cc-expiry", file: "expired.txt")
            #expect(requests.last?.toolResults.isEmpty == false)
            let detail = try await H.get(services.approvals, "/v1/approval-gates/\(try #require(gate["gateId"] as? String))", token: token)
            #expect((detail["gate"] as? JSON)?["status"] as? String == "expired", "\(detail)")
        }
    }

    @Test("a gate pending while the agent is paused past the hook's deadline still ends in a refusal once it is resumed")
    func pausedPastTheHooksDeadline() async throws {
        let harness = try await AgentHarness()
        try await harness.run { services in
            let token = try await harness.operatorToken()
            // Paused 20 s: past the hook's deadline, and past the hook timeout docs/agents.md used
            // to give (deadline + 10), which Claude Code's timer, running on while paused, fired
            // at resume: the tool ran.
            _ = try await Self.refusedBashStep(services, token: token, swarm: "cc-paused", file: "paused.txt") { agent in
                try await H.control(services.control, token: token, agent: agent, action: "pause")
                try await Task.sleep(for: .seconds(20))
                try await H.control(services.control, token: token, agent: agent, action: "resume")
            }
        }
    }

    @Test("headless: claude -p --permission-prompt-tool asks swarmdeck approve mcp, which waits on the phone's decision")
    func permissionPromptTool() async throws {
        let harness = try await AgentHarness()
        try await harness.run { services in
            let token = try await harness.operatorToken()
            let agent = "claude-\(UUID().uuidString.prefix(8))"
            let project = try RealAgent.project(gated: false, allowBash: false)
            let config = project.work.appendingPathComponent("mcp.json")
            let servers = ["mcpServers": ["swarmdeck": ["command": RealAgent.swarmdeck, "args": ["approve", "mcp", "--deadline-seconds", "120"]]]]
            try JSONSerialization.data(withJSONObject: servers).write(to: config)
            let prompt = try RealAgent.prompt(
                "Record it.",
                steps: [
                    ["tool": "Bash", "input": ["command": "echo via-mcp > mcp.txt"]],
                    ["tool": "Bash", "input": ["command": "echo refused > refused.txt"]],
                    ["text": "Recorded."],
                ]
            )
            let (claude, output) = try RealAgent.startClaude(
                services,
                swarm: "cc-mcp",
                agent: agent,
                project: project,
                prompt: prompt,
                extra: ["--mcp-config", config.path, "--permission-prompt-tool", "mcp__swarmdeck__approve"]
            )
            defer { if claude.isRunning { claude.terminate() } }
            let (first, _) = try await H.approveThenReject(services, token: token, agent: agent, reason: "no more files today")
            let detail = try await H.get(services.approvals, "/v1/approval-gates/\(try #require(first["gateId"] as? String))", token: token)
            #expect(detail["source"] as? String == "mcp", "\(detail)")
            let status = await RealAgent.exit(of: claude, timeout: .seconds(60))
            #expect(status == 0, "\((try? String(contentsOf: output, encoding: .utf8)) ?? "")")
            #expect(FileManager.default.fileExists(atPath: project.work.appendingPathComponent("mcp.txt").path))
            #expect(!FileManager.default.fileExists(atPath: project.work.appendingPathComponent("refused.txt").path))
            let results = services.provider.requests().filter { $0.scriptStep != nil }.flatMap(\.toolResults)
            #expect(results.contains { $0.contains("no more files today") }, "\(results)")
        }
    }
}

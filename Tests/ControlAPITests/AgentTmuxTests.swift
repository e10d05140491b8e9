import Contracts
import Foundation
import HummingbirdTesting
import ServiceKit
import StreamTestSupport
import Synchronization
import TestSupport
import Testing

@Suite("The connector in a tmux session (--tmux, live): the command on the pane's terminal, the session marked with its agent, no key in tmux")
struct AgentTmuxTests {
    typealias H = ControlHarness

    static let tmux = "/usr/bin/tmux"

    @Test(
        "a command run with --tmux has the pane as its terminal, its output plain on the stream, its session marked; the key reaches neither it nor tmux; terminate ends the session and the launcher"
    )
    func runInTmux() async throws {
        let harness = try await H(["CONTROL_OFFLINE_SECONDS": "30"])
        let suffix = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let agent = "tmux-" + suffix
        let socket = "sdc-" + suffix
        defer { _ = try? Spawn.output(Self.tmux, ["-L", socket, "kill-server"]) }
        try await harness.runWithStream { ingest, controlAPI, fanout in
            let key = try await harness.createKey(ingest)
            let token = try await harness.token()
            let messages = Mutex<[String]>([])
            let stream = StreamClient(port: try #require(fanout.port), token: token)
            async let frames = stream.run(
                sending: [subscribe(lastEventId: 0, filters: ["agentIds": [agent], "include": ["states", "logs"]])],
                timeout: .seconds(60)
            ) { frame in
                if let message = frame["message"] as? String { messages.withLock { $0.append(message) } }
                return frame["state"] as? String == "terminated" && (frame["attrs"] as? [String: Any])?["commandId"] != nil
            }
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("tmux-launcher-\(suffix).log").path
            defer { try? FileManager.default.removeItem(atPath: log) }
            let launcher = try Spawn.start(
                ControlEndToEndTests.swarmdeck.path,
                [
                    "agent", "run", "--tmux", agent, "--tmux-socket", socket, "--ingest-url", "http://127.0.0.1:\(try #require(ingest.port))",
                    "--control-url", "http://127.0.0.1:\(try #require(controlAPI.port))", "--swarm", "e2e", "--name", agent,
                    "--heartbeat-seconds", "1", "--grace-seconds", "2", "--", "sh", "-c",
                    #"tty; printf '\033[1;31mbold-%s\033[0m\n' $((6*7)); sleep 1000"#,
                ],
                output: log,
                environment: ["SWARMDECK_INGEST_KEY": key]
            )
            let status = Mutex<Int32?>(nil)
            defer {
                if status.withLock({ $0 }) == nil {
                    kill(launcher, SIGKILL)
                    Spawn.reap(launcher)
                }
            }

            let (_, pid) = try await ControlEndToEndTests.runningAgent(controlAPI, agent, token: token)
            // The session is marked with the agent and its swarm (what terminal-broker lists).
            let sessions = try Spawn.output(
                Self.tmux,
                ["-L", socket, "list-sessions", "-F", "#{session_name}|#{@swarmdeck-agent}|#{@swarmdeck-swarm}"]
            )
            #expect(sessions.split(separator: "\n").contains("\(agent)|\(agent)|e2e"), "\(sessions)")
            // The command's terminal is the pane: tty names a pseudo-terminal, the colours reach
            // the pane, and the line reaches the stream without them.
            let painted = await eventually(timeout: .seconds(10)) {
                let pane = (try? Spawn.output(Self.tmux, ["-L", socket, "capture-pane", "-p", "-e", "-t", "=\(agent):"])) ?? ""
                return pane.contains("/dev/pts/") && (pane.contains("\u{1B}[1m\u{1B}[31mbold-42") || pane.contains("\u{1B}[1;31mbold-42"))
            }
            let pane = (try? Spawn.output(Self.tmux, ["-L", socket, "capture-pane", "-p", "-e", "-t", "=\(agent):"])) ?? ""
            #expect(painted, "\(pane)")
            #expect(await eventually(timeout: .seconds(15)) { messages.withLock { $0.contains("bold-42") } }, "\(messages.withLock { $0 })")
            #expect(messages.withLock { $0.contains { $0.hasPrefix("/dev/pts/") } }, "\(messages.withLock { $0 })")
            // The key is in neither the command's environment nor tmux's.
            let environ = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))) ?? Data()
            #expect(!environ.isEmpty && !String(decoding: environ, as: UTF8.self).contains(key))
            #expect(!(try Spawn.output(Self.tmux, ["-L", socket, "show-environment", "-g"])).contains(key))
            #expect(!(try Spawn.output(Self.tmux, ["-L", socket, "show-environment", "-t", "=\(agent)"])).contains(key))

            // Terminate through control-api: the command ends, the connector with it, then the
            // session, and the launcher exits 0.
            let (accepted, _) = try await H.call(
                controlAPI,
                .post,
                "/v1/agents/\(agent)/control",
                token: token,
                json: ["action": "terminate", "reason": "e2e tmux", "requestId": "tmux-stop", "confirm": "TERMINATE"]
            )
            #expect(accepted == .accepted)
            let ended = await eventually(timeout: .seconds(20)) {
                if let code = Spawn.exited(launcher) { status.withLock { $0 = code } }
                return status.withLock { $0 } != nil
            }
            #expect(ended && status.withLock { $0 } == 0, "launcher: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            let gone = try Spawn.output(Self.tmux, ["-L", socket, "list-sessions", "-F", "#{session_name}"])
            #expect(!gone.contains(agent))
            _ = try await frames
        }
    }
}

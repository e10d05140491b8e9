import Contracts
import Foundation
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import StreamTestSupport
import SwarmdeckTools
import Synchronization
import TestSupport
import Testing

@Suite("The connector in a tmux session (--tmux, live): the command on the pane's terminal, the session marked with its agent, no key in tmux")
struct AgentTmuxTests {
    typealias H = ControlHarness

    static let tmux = "/usr/bin/tmux"

    @Test(
        """
        a command run with --tmux has the pane as its terminal (keys and window size pass through), its output plain on the stream, \
        its session marked and named in the agent's detail; the key reaches neither it, nor tmux, nor the connector's environment; \
        terminate ends the session and the launcher
        """
    )
    func runInTmux() async throws {
        let harness = try await H(["CONTROL_OFFLINE_SECONDS": "30"])
        let suffix = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let agent = "tmux-" + suffix
        let socket = "sdc-" + suffix
        @Sendable func tmux(_ arguments: [String]) throws -> String { try Spawn.output(Self.tmux, ["-L", socket] + arguments) }
        defer { _ = try? tmux(["kill-server"]) }
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
                    #"tty; printf '\033[1;31mbold-%s\033[0m\n' $((6*7)); while read line; do echo "got $line"; stty size; done"#,
                ],
                output: log,
                errors: log + ".err",
                environment: .inherited(["SWARMDECK_INGEST_KEY": key])
            )
            defer { try? FileManager.default.removeItem(atPath: log + ".err") }
            let status = Mutex<Int32?>(nil)
            defer {
                if status.withLock({ $0 }) == nil {
                    kill(launcher, SIGKILL)
                    Spawn.reap(launcher)
                }
            }
            let launcherLog = { (try? String(contentsOfFile: log + ".err", encoding: .utf8)) ?? "" }

            let (record, pid) = try await ControlEndToEndTests.runningAgent(controlAPI, agent, token: token)
            // The agent's detail says where its terminal is, and the session names its agent.
            let terminal = record["terminal"] as? [String: Any]
            #expect(terminal?["tmuxSession"] as? String == agent && terminal?["host"] as? String == ProcessInfo.processInfo.hostName, "\(record)")
            let sessions = try tmux(["list-sessions", "-F", "#{session_name}|#{@swarmdeck-agent}|#{@swarmdeck-swarm}"])
            #expect(sessions.split(separator: "\n").contains("\(agent)|\(agent)|e2e"), "\(sessions)")
            // The command's terminal is the pane: tty names a pseudo-terminal, the colours reach
            // the pane, and the line reaches the stream without them.
            let capture = { (try? tmux(["capture-pane", "-p", "-e", "-t", "=\(agent):"])) ?? "" }
            let painted = await eventually(timeout: .seconds(10)) {
                let pane = capture()
                return pane.contains("/dev/pts/") && (pane.contains("\u{1B}[1m\u{1B}[31mbold-42") || pane.contains("\u{1B}[1;31mbold-42"))
            }
            #expect(painted, "\(capture())")
            #expect(await eventually(timeout: .seconds(15)) { messages.withLock { $0.contains("bold-42") } }, "\(messages.withLock { $0 })")
            #expect(messages.withLock { $0.contains { $0.hasPrefix("/dev/pts/") } }, "\(messages.withLock { $0 })")
            // Keys typed in the pane reach the command, and a new window size with them.
            _ = try tmux(["resize-window", "-t", "=\(agent):", "-x", "100", "-y", "30"])
            _ = try tmux(["send-keys", "-t", "=\(agent):", "-l", "hello"])
            _ = try tmux(["send-keys", "-t", "=\(agent):", "Enter"])
            #expect(await eventually(timeout: .seconds(10)) { capture().contains("got hello") && capture().contains("30 100") }, "\(capture())")

            // The key is in neither the command's environment, nor tmux's, nor the connector's in
            // the pane (it came over the handover socket, which is gone).
            let connector = try #require(
                Int32(try tmux(["display-message", "-p", "-t", "=\(agent):", "#{pane_pid}"]).trimmingCharacters(in: .whitespacesAndNewlines))
            )
            for process in [pid, connector] {
                let environ = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(process)/environ"))) ?? Data()
                #expect(!environ.isEmpty && !String(decoding: environ, as: UTF8.self).contains(key), "pid \(process)")
            }
            #expect(!(try tmux(["show-environment", "-g"])).contains(key))
            #expect(!(try tmux(["show-environment", "-t", "=\(agent)"])).contains(key))
            let arguments = String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(connector)/cmdline"))) ?? Data(), as: UTF8.self)
                .split(separator: "\0").map(String.init)
            let handover = try #require(arguments.firstIndex(of: "--key-socket").map { arguments[$0 + 1] }, "\(arguments)")
            #expect(
                !FileManager.default.fileExists(atPath: handover)
                    && !FileManager.default.fileExists(atPath: (handover as NSString).deletingLastPathComponent)
            )
            // The command holds nothing of the connector's: no pseudo-terminal master, no socket, no pipe.
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            let targets = descriptors.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }
            #expect(!targets.isEmpty && targets.allSatisfy { $0.hasPrefix("/dev/pts/") || $0 == "/dev/null" }, "\(targets)")

            // Terminate through control-api: the command ends, the connector with it, then the
            // session, and the launcher exits with the connector's status (the command's: TERM).
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
            #expect(ended && status.withLock { $0 } == 143, "launcher status \(String(describing: status.withLock { $0 })): \(launcherLog())")
            #expect(!(try tmux(["list-sessions", "-F", "#{session_name}"])).contains(agent))
            _ = try await frames
        }
    }

    @Test("a launcher refuses a tmux server that already holds the ingest key, and a second session of the same name")
    func refusals() async throws {
        let suffix = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let socket = "sdr-" + suffix
        @Sendable func tmux(_ arguments: [String]) throws -> String { try Spawn.output(Self.tmux, ["-L", socket] + arguments) }
        defer { _ = try? tmux(["kill-server"]) }
        let key = "sdi_refusal" + suffix
        _ = try tmux(["new-session", "-d", "-s", "taken", "sleep 600"])
        func launch(_ name: String) throws -> (status: Int32, errors: String) {
            let result = try Spawn.result(
                ControlEndToEndTests.swarmdeck.path,
                ["agent", "run", "--tmux", name, "--tmux-socket", socket, "--url", "http://127.0.0.1:9", "--name", "a-\(suffix)", "--", "true"],
                environment: .inherited(["SWARMDECK_INGEST_KEY": key])
            )
            return (result.status, result.errors)
        }
        let taken = try launch("taken")
        #expect(taken.status != 0 && taken.errors.contains("exists already"), "\(taken)")
        _ = try tmux(["set-environment", "-g", "SWARMDECK_INGEST_KEY", key])
        let leaky = try launch("fresh")
        #expect(leaky.status != 0 && leaky.errors.contains("global environment holds the ingest key"), "\(leaky)")
        #expect(!(try tmux(["list-sessions", "-F", "#{session_name}"])).contains("fresh"))
    }
}

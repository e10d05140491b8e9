import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceKit
import StreamFanout
import StreamTestSupport
import SwarmdeckTools
import TestSupport
import Testing

/// An ACP agent built on PyPI's `agent-client-protocol` (deploy/local/acp-agent), run by the real
/// connector with `--acp`, spoken to by seed 003 clients on `/v1/acp` through the real
/// services: ingest, control-api, approvals and stream-fanout.
@Suite("ACP both ways: phones on /v1/acp, an agent-client-protocol agent behind the connector")
struct ACPAgentTests {
    typealias Frame = [String: Any]

    static func prompt(_ id: Int, thread: String, _ text: String) -> Frame {
        ["jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": ["sessionId": thread, "prompt": [["type": "text", "text": text]]]]
    }

    /// The agent's answer to the phone's request `id`, in the thread.
    static func stopReason(_ phone: ACPPhone, _ id: Int, timeout: Duration = .seconds(60)) async throws -> String? {
        let envelope = try await phone.waitFor("the agent's answer to \(id)", timeout: timeout) {
            $0["direction"] as? String == "agent_to_client" && $0.body["id"] as? Int == id && $0.body["result"] != nil
        }
        return (envelope.body["result"] as? Frame)?["stopReason"] as? String
    }

    /// A scratch folder and the connector's state file beside it.
    static func folder() throws -> (work: URL, state: URL) {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("acp-\(UUID().uuidString)/work")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        return (work, work.deletingLastPathComponent().appendingPathComponent("state.json"))
    }

    /// Starts `swarmdeck agent run --acp … -- python deploy/local/acp-agent` in `folder`.
    static func start(
        _ services: AgentHarness.Services,
        agent: String,
        folder: (work: URL, state: URL),
        fanoutPort: Int
    ) throws -> (process: Process, output: URL) {
        guard let python = ProcessInfo.processInfo.environment["SWARMDECK_PYTHON"] else {
            throw HarnessError(message: "SWARMDECK_PYTHON is not set: run the tests with ./scripts/test (it installs agent-client-protocol)")
        }
        let script = TestEnvironment.repositoryRoot
            .appendingPathComponent("deploy/local/acp-agent").path
        return try RealAgent.launch(
            services,
            swarm: "acp-swarm",
            agent: agent,
            in: folder.work,
            command: [python, script],
            options: ["--acp", "--acp-state", folder.state.path, "--stream-url", "http://127.0.0.1:\(fanoutPort)"],
            environment: services.connectorEnvironment
        )
    }

    /// The connector's state file, once it has opened the agent's session.
    static func savedState(_ folder: (work: URL, state: URL)) async throws -> Frame {
        try await AgentHarness.waitFor("the connector's state file", timeout: .seconds(60)) {
            FileManager.default.contents(atPath: folder.state.path).flatMap { try? JSONSerialization.jsonObject(with: $0) as? Frame }
        }
    }

    @Test(
        "a prompt reaches the agent and its updates reach two phones in one order; a permission answered in the thread settles the gate; cancel stops the turn; a client resuming mid-turn misses nothing; scopes, tenants and size are checked"
    )
    func bothWays() async throws {
        let harness = try await AgentHarness()
        try await harness.run { services in
            try await harness.live.application(StreamFanoutService.self).test(.live) { fanout in
                let port = try #require(fanout.port)
                let agent = "acp-1"
                let folder = try Self.folder()
                let (process, output) = try Self.start(services, agent: agent, folder: folder, fanoutPort: port)
                defer { if process.isRunning { process.terminate() } }
                let log = { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }

                // The thread exists before any phone looks: the connector opened the session.
                let saved = try await Self.savedState(folder)
                let thread = try #require(saved["thread"] as? String, "\(log())")
                #expect(thread.hasPrefix("sess-"))

                let person = try await harness.live.token(subject: "phone-a", scopes: [.threadRead, .threadWrite, .toolRun])
                let watcher = try await harness.live.token(subject: "tablet-b", scopes: [.streamRead, .threadWrite])
                let phone = ACPPhone(port: port, token: person)
                let tablet = ACPPhone(port: port, token: watcher)
                defer {
                    phone.close()
                    tablet.close()
                }
                for client in [phone, tablet] {
                    client.send(["jsonrpc": "2.0", "id": 100, "method": "acp.cache.subscribe", "params": ["thread_id": thread, "from_seq": 1]])
                    _ = try await client.answer(to: 100)
                }
                // initialize and session/new, both ways, are the thread's first four envelopes.
                let opened = try await phone.waitFor("the session's opening") { $0["seq"] as? Int == 4 }
                #expect(opened["direction"] as? String == "agent_to_client")
                #expect(phone.envelopes.prefix(4).map { $0.body["method"] as? String } == ["initialize", nil, "session/new", nil])

                // 1. A prompt: committed, delivered, answered; both phones see one order.
                phone.send(Self.prompt(1, thread: thread, "hello"))
                let sent = try await phone.waitFor("the acknowledgement") { $0["method"] as? String == "acp.cache.sent" }
                let sentSeq = try #require((sent["params"] as? Frame)?["seq"] as? Int)
                #expect(try await Self.stopReason(phone, 1) == "end_turn")
                _ = try await Self.stopReason(tablet, 1)
                let stored = try #require(phone.envelopes.first { $0["seq"] as? Int == sentSeq })
                #expect(stored["direction"] as? String == "client_to_agent")
                #expect(stored["origin"] as? String == "client")
                #expect(stored["device"] as? String == "phone-a")
                #expect(stored["session_id"] as? String == thread)
                let chunks = phone.envelopes.compactMap(\.chunkText)
                #expect(Array(chunks.prefix(4)) == ["echo: hello", "part 1", "part 2", "part 3"])
                let phoneSeqs = phone.envelopes.compactMap { $0["seq"] as? Int }
                #expect(phoneSeqs == Array(1...phoneSeqs.count), "\(phoneSeqs)")
                #expect(tablet.envelopes.compactMap { $0["seq"] as? Int }.prefix(phoneSeqs.count) == phoneSeqs[...])

                // 2. A permission request: a gate opens; the tablet (no tool:run) cannot allow;
                // the phone's answer in the thread lets the agent go on and settles the gate.
                phone.send(Self.prompt(2, thread: thread, "ask permission"))
                let request = try await phone.waitFor("the permission request") { $0.body["method"] as? String == "session/request_permission" }
                let requestID = try #require(request.body["id"])
                let token = try await harness.operatorToken()
                let gate = try await AgentHarness.pendingGate(services.approvals, token: token, agent: agent)
                let allow: Frame = ["jsonrpc": "2.0", "id": requestID, "result": ["outcome": ["outcome": "selected", "optionId": "allow-once"]]]
                tablet.send(allow)
                let refused = try await tablet.waitFor("the tablet's refusal") { ($0["error"] as? Frame)?["code"] as? Int == -32003 }
                #expect(((refused["error"] as? Frame)?["message"] as? String)?.contains("tool:run") == true)
                phone.send(allow)
                #expect(try await Self.stopReason(phone, 2) == "end_turn")
                #expect(phone.envelopes.compactMap(\.chunkText).contains("permission: selected:allow-once"))
                let gateID = try #require(gate["gateId"] as? String)
                let settled = try await AgentHarness.waitFor("the gate settled from the thread") {
                    let found = try await AgentHarness.get(services.approvals, "/v1/approval-gates/\(gateID)", token: token)["gate"] as? Frame
                    return found?["status"] as? String == "pending" ? nil : found
                }
                #expect(settled["status"] as? String == "approved", "\(settled)")

                // 3. Cancel stops a turn; a client resuming mid-turn from from_seq misses nothing.
                phone.send(Self.prompt(3, thread: thread, "go slow"))
                let tick = try await phone.waitFor("a tick") { $0.chunkText == "tick 2" }
                let resumeFrom = try #require(tick["seq"] as? Int) - 1
                let late = ACPPhone(port: port, token: person)
                defer { late.close() }
                late.send(["jsonrpc": "2.0", "id": 7, "method": "acp.cache.subscribe", "params": ["thread_id": thread, "from_seq": resumeFrom]])
                phone.send(["jsonrpc": "2.0", "method": "session/cancel", "params": ["sessionId": thread]])
                #expect(try await Self.stopReason(phone, 3) == "cancelled")
                _ = try await Self.stopReason(late, 3)
                let lateSeqs = late.envelopes.compactMap { $0["seq"] as? Int }
                #expect(lateSeqs == Array(resumeFrom..<(resumeFrom + lateSeqs.count)), "\(lateSeqs)")

                // 4. Refusals: no thread:write, another tenant, a frame over the limit (nothing stored).
                let reader = ACPPhone(port: port, token: try await harness.live.token(subject: "reader", scopes: [.streamRead]))
                let stranger = ACPPhone(
                    port: port,
                    token: try await harness.live.token(
                        tenant: "other-\(UUID().uuidString.prefix(8))",
                        subject: "x",
                        scopes: [.threadRead, .threadWrite]
                    )
                )
                defer {
                    reader.close()
                    stranger.close()
                }
                reader.send(Self.prompt(9, thread: thread, "not allowed"))
                #expect(((try await reader.answer(to: 9))["error"] as? Frame)?["code"] as? Int == -32003)
                stranger.send(Self.prompt(9, thread: thread, "not yours"))
                #expect(((try await stranger.answer(to: 9))["error"] as? Frame)?["code"] as? Int == -32004)
                let head = try #require(phone.envelopes.last?["seq"] as? Int)
                phone.send(Self.prompt(10, thread: thread, String(repeating: "x", count: 40_000)))
                let tooLarge = try await phone.answer(to: 10)
                #expect((tooLarge["error"] as? Frame)?["code"] as? Int == -32006)
                phone.send(["jsonrpc": "2.0", "id": 101, "method": "acp.cache.fetch", "params": ["thread_id": thread, "from_seq": head + 1]])
                let after = try #require((try await phone.answer(to: 101))["result"] as? Frame)
                #expect(after["head_seq"] as? Int == head, "a refused frame was stored")

                // The connector ends the agent when told to.
                try await AgentHarness.control(services.control, token: token, agent: agent, action: "terminate")
                #expect(await RealAgent.exit(of: process, timeout: .seconds(30)) != nil, "\(log())")
            }
        }
    }

    @Test(
        "pause holds the agent's frames and resume delivers them; a connector started again on the same session delivers what came while it was down, once"
    )
    func pauseAndRestart() async throws {
        let harness = try await AgentHarness()
        try await harness.run { services in
            try await harness.live.application(StreamFanoutService.self).test(.live) { fanout in
                let port = try #require(fanout.port)
                let agent = "acp-2"
                let folder = try Self.folder()
                var (process, output) = try Self.start(services, agent: agent, folder: folder, fanoutPort: port)
                defer { if process.isRunning { process.terminate() } }
                let saved = try await Self.savedState(folder)
                let thread = try #require(saved["thread"] as? String)
                let phone = ACPPhone(port: port, token: try await harness.live.token(subject: "phone-c", scopes: [.threadRead, .threadWrite]))
                defer { phone.close() }
                phone.send(["jsonrpc": "2.0", "id": 100, "method": "acp.cache.subscribe", "params": ["thread_id": thread, "from_seq": 1]])
                _ = try await phone.answer(to: 100)
                phone.send(Self.prompt(1, thread: thread, "one"))
                #expect(try await Self.stopReason(phone, 1) == "end_turn")

                // Paused, the agent answers nothing; resumed, it answers what came meanwhile.
                let token = try await harness.operatorToken()
                try await AgentHarness.control(services.control, token: token, agent: agent, action: "pause")
                _ = try await AgentHarness.waitFor("the agent stopped") { () -> Bool? in
                    let tree = ProcessTree.descendants(of: process.processIdentifier)
                    return !tree.isEmpty && tree.values.allSatisfy { $0 == "T" } ? true : nil
                }
                phone.send(Self.prompt(2, thread: thread, "while paused"))
                try await Task.sleep(for: .seconds(2))
                #expect(!phone.envelopes.contains { $0.chunkText == "echo: while paused" }, "the paused agent answered")
                try await AgentHarness.control(services.control, token: token, agent: agent, action: "resume")
                #expect(try await Self.stopReason(phone, 2) == "end_turn")

                // The connector stops (and its agent with it); a prompt comes meanwhile; started
                // again on the same state, it loads the session and delivers that prompt once.
                process.terminate()
                #expect(await RealAgent.exit(of: process, timeout: .seconds(30)) != nil)
                phone.send(Self.prompt(3, thread: thread, "while down"))
                _ = try await phone.waitFor("the prompt stored") {
                    $0["method"] as? String == "acp.cache.sent" && ($0["params"] as? Frame)?["id"] as? Int == 3
                }
                (process, output) = try Self.start(services, agent: agent, folder: folder, fanoutPort: port)
                #expect(try await Self.stopReason(phone, 3) == "end_turn", "\((try? String(contentsOf: output, encoding: .utf8)) ?? "")")
                let reloaded = try await Self.savedState(folder)
                #expect(reloaded["thread"] as? String == thread)
                try await Task.sleep(for: .seconds(1))
                let echoes = phone.envelopes.compactMap(\.chunkText).filter { $0.hasPrefix("echo: ") }
                #expect(echoes == ["echo: one", "echo: while paused", "echo: while down"], "\(echoes)")
                try await AgentHarness.control(services.control, token: token, agent: agent, action: "terminate")
                #expect(await RealAgent.exit(of: process, timeout: .seconds(30)) != nil)
            }
        }
    }
}

import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import TerminalBroker

@Suite("terminal-broker against a real sshd and tmux: list, attach, live output, resume, read-only, shared attach (live)")
struct TerminalAttachTests {
    typealias H = TerminalHarness

    @Test("list then attach: the first screen shows what the pane showed, live output follows with rising seqs, the window keeps its size")
    func listAndAttach() async throws {
        let harness = try await H()
        try await harness.sshd.newSession("agent-1")
        try await harness.sshd.type("agent-1", "echo before-attach-$((6*7))")
        // The connector run with --tmux marks its session with the agent and swarm.
        try await harness.sshd.newSession("mapped")
        _ = try harness.sshd.tmux(["set-option", "-t", "mapped", "@swarmdeck-agent", "demo-1"])
        _ = try harness.sshd.tmux(["set-option", "-t", "mapped", "@swarmdeck-swarm", "demo"])
        try await harness.run { client in
            let host = try await harness.register(client)
            let phone = try await harness.token()
            let (sessions, hosts) = try await harness.sessions(client, token: phone)
            #expect(hosts.first?["status"] as? String == "ok", "\(hosts)")
            let listed = try #require(sessions.first { $0["tmuxSessionName"] as? String == "agent-1" }, "\(sessions)")
            #expect(listed["hostnameOrIP"] as? String == "127.0.0.1")
            #expect(listed["port"] as? Int == harness.sshd.port)
            #expect(listed["username"] as? String == harness.sshd.username)
            #expect(listed["cols"] as? Int == 80 && listed["rows"] as? Int == 24)
            #expect(listed["agentId"] == nil && listed["swarmId"] == nil, "\(listed)")
            let mapped = try #require(sessions.first { $0["tmuxSessionName"] as? String == "mapped" }, "\(sessions)")
            #expect(mapped["agentId"] as? String == "demo-1" && mapped["swarmId"] as? String == "demo", "\(mapped)")
            let id = try #require(listed["sessionId"] as? String)
            #expect(id == harness.sessionID(host: host, name: "agent-1"))
            let (status, detail) = try await LiveCall.call(client, .get, "/v1/terminal/sessions/\(id)", token: phone)
            #expect(status == .ok && detail["authMode"] as? String == "publicKey", "\(detail)")

            let viewer = harness.viewer(client, session: id, token: phone)
            defer { viewer.close() }
            try await viewer.wait(for: "hello and a screen") { frames in frames.contains { $0["type"] as? String == "screen" } }
            let hello = try #require(viewer.frames.first)
            #expect(hello["type"] as? String == "hello" && hello["input"] as? Bool == false, "\(hello)")
            #expect(viewer.painted.contains("before-attach-42"))
            let screen = try #require(viewer.frames.first { $0["type"] as? String == "screen" })
            #expect(screen["cols"] as? Int == 80 && screen["rows"] as? Int == 24)

            try await harness.sshd.type("agent-1", "echo live-$((7*6))")
            try await viewer.wait(for: "live output") { _ in viewer.painted.contains("live-42") }
            let seqs = viewer.frames.filter { $0["type"] as? String == "output" }.compactMap { $0["seq"] as? Int }
            #expect(!seqs.isEmpty && seqs == seqs.sorted() && Set(seqs).count == seqs.count, "\(seqs)")
            #expect(try await harness.sshd.windowSize("agent-1") == "80x24")
        }
    }

    @Test("a viewer that reconnects with after=SEQ gets exactly what it missed, no fresh screen")
    func reconnectResumes() async throws {
        let harness = try await H()
        try await harness.sshd.newSession("agent-2")
        try await harness.run { client in
            let host = try await harness.register(client)
            let phone = try await harness.token()
            let id = harness.sessionID(host: host, name: "agent-2")
            // A second viewer keeps the session attached while the first one is away.
            let keeper = harness.viewer(client, session: id, token: phone)
            defer { keeper.close() }
            try await keeper.wait(for: "keeper's screen") { frames in frames.contains { $0["type"] as? String == "screen" } }

            let first = harness.viewer(client, session: id, token: phone)
            try await harness.sshd.type("agent-2", "echo one-$((1+1))")
            try await first.wait(for: "first output") { _ in first.painted.contains("one-2") }
            let seen = first.lastSeq
            let attachment = try #require(first.frames.first?["attachment"] as? String)
            let keeperAttachment = keeper.frames.first?["attachment"] as? String
            #expect(keeperAttachment == attachment, "both viewers joined one attachment")
            first.close()

            try await harness.sshd.type("agent-2", "echo missed-$((2+2))")
            try await keeper.wait(for: "the keeper sees the missed output") { _ in keeper.painted.contains("missed-4") }

            // A resume names the attachment it saw; another one's seqs would mean nothing.
            let elsewhere = harness.viewer(client, session: id, token: phone, query: "after=\(seen)&attachment=0000000000000000")
            try await elsewhere.wait(for: "a fresh screen for an unknown attachment") { frames in
                frames.contains { $0["type"] as? String == "screen" }
            }
            elsewhere.close()
            let again = harness.viewer(client, session: id, token: phone, query: "after=\(seen)&attachment=\(attachment)")
            defer { again.close() }
            try await again.wait(for: "the missed output") { _ in again.painted.contains("missed-4") }
            #expect(!again.frames.contains { $0["type"] as? String == "screen" }, "a resume sends no screen")
            let seqs = again.frames.compactMap { $0["seq"] as? Int }
            #expect(seqs.first == Int(seen) + 1, "\(seqs) after \(seen)")
            // What the keeper got after `seen` is what the resumed viewer got, byte for byte.
            let keeperAfter = keeper.frames.filter { ($0["seq"] as? Int ?? 0) > Int(seen) && $0["type"] as? String == "output" }
            let againOutputs = again.frames.filter { $0["type"] as? String == "output" }
            let common = min(keeperAfter.count, againOutputs.count)
            #expect(common > 0)
            #expect(
                keeperAfter.prefix(common).compactMap { $0["data"] as? String } == againOutputs.prefix(common).compactMap { $0["data"] as? String }
            )
        }
    }

    @Test("two viewers share one tmux client, and neither changes the window size")
    func twoViewersOneAttach() async throws {
        let harness = try await H()
        try await harness.sshd.newSession("agent-3")
        try await harness.run { client in
            let host = try await harness.register(client)
            let phone = try await harness.token()
            let id = harness.sessionID(host: host, name: "agent-3")
            let one = harness.viewer(client, session: id, token: phone)
            let two = harness.viewer(client, session: id, token: phone)
            defer {
                one.close()
                two.close()
            }
            for viewer in [one, two] {
                try await viewer.wait(for: "a screen") { frames in frames.contains { $0["type"] as? String == "screen" } }
            }
            let clients = try await harness.sshd.clients("agent-3")
            #expect(clients.count == 1, "one tmux client for both viewers: \(clients)")
            #expect(clients.first?.contains("ignore-size") == true, "\(clients)")
            try await harness.sshd.type("agent-3", "echo both-$((3*3))")
            for viewer in [one, two] {
                try await viewer.wait(for: "output on each viewer") { _ in viewer.painted.contains("both-9") }
            }
            #expect(try await harness.sshd.windowSize("agent-3") == "80x24")
        }
    }

    @Test("read-only holds: input without asking, or asking without terminal:write, never reaches tmux; with both it does and is audited")
    func readOnly() async throws {
        let harness = try await H()
        try await harness.sshd.newSession("agent-4")
        try await harness.run { client in
            let host = try await harness.register(client)
            let id = harness.sessionID(host: host, name: "agent-4")
            let watcher = try await harness.token(scopes: [.terminalAttach, .terminalWrite])

            // Not asked: refused in the protocol, nothing typed.
            let silent = harness.viewer(client, session: id, token: watcher)
            try await silent.wait(for: "screen") { frames in frames.contains { $0["type"] as? String == "screen" } }
            try silent.send(["type": "input", "data": "echo sneaky-$((5*5))\r"])
            try await silent.wait(for: "a refusal") { frames in
                frames.contains { (($0["error"] as? [String: Any])?["code"] as? String) == "PermissionDenied" }
            }
            silent.close()

            // Asked without the scope: the attach is refused.
            let reader = try await harness.token(scopes: [.terminalAttach])
            let refused = harness.viewer(client, session: id, token: reader, query: "input=true")
            #expect(try await refused.ended() == "PermissionDenied")
            refused.close()
            try await Task.sleep(for: .milliseconds(300))
            #expect(!(try await harness.sshd.capture("agent-4")).contains("sneaky-25"))

            // Asked, with the scope: typed, and audited.
            let typist = harness.viewer(client, session: id, token: watcher, query: "input=true")
            defer { typist.close() }
            try await typist.wait(for: "screen") { frames in frames.contains { $0["type"] as? String == "screen" } }
            #expect(typist.frames.first?["input"] as? Bool == true)
            try typist.send(["type": "input", "data": "echo typed-$((8*8))\r"])
            try await typist.wait(for: "the echo") { _ in typist.painted.contains("typed-64") }
            #expect(try await harness.sshd.capture("agent-4").contains("typed-64"))
            let (_, audit) = try await LiveCall.call(client, .get, "/v1/terminal/audit", token: try await harness.admin())
            let entries = audit["entries"] as? [[String: Any]] ?? []
            #expect(entries.contains { $0["action"] as? String == "attach.input" && $0["sessionName"] as? String == "agent-4" }, "\(entries)")
        }
    }

    @Test(
        "every attach is recorded as asciicast v2: from its screen on, the recording replays to the bytes the viewer was sent; listed and downloaded per session, for its tenant only"
    )
    func recording() async throws {
        let harness = try await H()
        try await harness.sshd.newSession("agent-5")
        try await harness.run { client in
            let host = try await harness.register(client)
            let phone = try await harness.token(scopes: [.terminalAttach, .terminalWrite])
            let id = harness.sessionID(host: host, name: "agent-5")
            let viewer = harness.viewer(client, session: id, token: phone, query: "input=true")
            try await viewer.wait(for: "a screen") { frames in frames.contains { $0["type"] as? String == "screen" } }
            try viewer.send(["type": "input", "data": "printf 'rec-%s\\n' $((9*9))\r"])
            try await viewer.wait(for: "the output") { _ in viewer.painted.contains("rec-81") }
            let painted = viewer.painted
            viewer.close()

            let (status, list) = try await LiveCall.call(client, .get, "/v1/terminal/sessions/\(id)/recordings", token: phone)
            #expect(status == .ok)
            let recordings = list["recordings"] as? [[String: Any]] ?? []
            let recordingID = try #require(recordings.first?["recordingId"] as? String, "\(list)")
            let data = try await client.execute(
                uri: "/v1/terminal/sessions/\(id)/recordings/\(recordingID)",
                method: .get,
                headers: [.authorization: "Bearer \(phone)"]
            ) { response in
                #expect(response.headers[.contentType] == "application/x-asciicast")
                return Array(response.body.readableBytesView)
            }
            let (header, events) = try AsciicastRecording.parse(data)
            #expect(header.width == 80 && header.height == 24)
            let fromScreen = events.drop { $0.1 != .marker("screen") }.dropFirst()
            let replayed = fromScreen.compactMap { event -> String? in
                if case .output(let text) = event.1 { return text }
                return nil
            }.joined()
            #expect(replayed.hasPrefix(painted), "the recording replays what the viewer was sent")
            #expect(events.contains { $0.1 == .input("printf 'rec-%s\\n' $((9*9))\r") }, "input is recorded")

            let (reader, readerAnswer) = try await LiveCall.call(
                client,
                .get,
                "/v1/terminal/sessions/\(id)/recordings",
                token: try await harness.token()
            )
            #expect(reader == .forbidden && readerAnswer.errorCode == "PermissionDenied", "recordings hold input: not for read-only tokens")
            let stranger = try await harness.token(
                tenant: "other-" + String(UInt64.random(in: 0..<UInt64.max), radix: 36),
                scopes: [.terminalAttach, .terminalWrite]
            )
            let (hidden, answer) = try await LiveCall.call(client, .get, "/v1/terminal/sessions/\(id)/recordings", token: stranger)
            #expect(hidden == .notFound && answer.errorCode == "NotFound")
            let (missing, _) = try await LiveCall.call(client, .get, "/v1/terminal/sessions/\(id)/recordings/../../x", token: phone)
            #expect(missing == .notFound)
            let (malformed, _) = try await LiveCall.call(client, .get, "/v1/terminal/sessions/\(id)/recordings/123-zzzzzzzz", token: phone)
            #expect(malformed == .notFound)
        }
    }
}

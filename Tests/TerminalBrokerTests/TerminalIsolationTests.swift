import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import PlainWebSocket
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import TerminalBroker

@Suite("terminal-broker: another tenant's hosts and sessions do not exist for a caller, bad input is a 4xx in the envelope, every limit holds (live)")
struct TerminalIsolationTests {
    typealias H = TerminalHarness

    @Test("tenant isolation on every endpoint and the WebSocket")
    func isolation() async throws {
        let harness = try await H()
        try await harness.sshd.newSession("mine")
        try await harness.run { client in
            let host = try await harness.register(client)
            let session = harness.sessionID(host: host, name: "mine")
            let other = "other-" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
            let theirAdmin = try await harness.admin(tenant: other)
            let theirPhone = try await harness.token(tenant: other, scopes: [.terminalAttach, .terminalWrite])

            let (_, hosts) = try await LiveCall.call(client, .get, "/v1/terminal/hosts", token: theirAdmin)
            #expect((hosts["hosts"] as? [Any])?.isEmpty == true, "\(hosts)")
            let (listed, sessions) = try await harness.sessions(client, token: theirPhone)
            #expect(listed.isEmpty && sessions.isEmpty)
            for (method, uri) in [
                (HTTPRequest.Method.get, "/v1/terminal/hosts/\(host)/key"), (.delete, "/v1/terminal/hosts/\(host)"),
                (.post, "/v1/terminal/hosts/\(host)/trust-reset"),
            ] {
                let (status, body) = try await LiveCall.call(client, method, uri, token: theirAdmin)
                #expect(status == .notFound && body.errorCode == "NotFound", "\(method) \(uri): \(status) \(body)")
            }
            let (status, body) = try await LiveCall.call(client, .get, "/v1/terminal/sessions/\(session)", token: theirPhone)
            #expect(status == .notFound && body.errorCode == "NotFound", "\(body)")
            let viewer = harness.viewer(client, session: session, token: theirPhone, query: "input=true")
            #expect(try await viewer.ended() == "NotFound")
            viewer.close()
            let (_, audit) = try await LiveCall.call(client, .get, "/v1/terminal/audit", token: theirAdmin)
            #expect((audit["entries"] as? [Any])?.isEmpty == true, "\(audit)")
            // Still there for its own tenant.
            let (mine, _) = try await harness.sessions(client, token: try await harness.token())
            #expect(mine.contains { $0["sessionId"] as? String == session })
        }
    }

    @Test("each tenant logs in with its own key: A registering B's host (its address and user) cannot list or type into B's sessions")
    func hostTakeover() async throws {
        let harness = try await H()
        let victim = "victim-" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
        // The sshd lets in the victim's key only.
        try harness.sshd.authorize(lines: [try harness.tenantKey(victim)])
        try await harness.sshd.newSession("theirs")
        try await harness.run { client in
            // Each admin reads its own tenant's key; they differ, and each is the one the broker uses.
            let (_, mine) = try await LiveCall.call(client, .get, "/v1/terminal/ssh-key", token: try await harness.admin())
            let (_, theirs) = try await LiveCall.call(client, .get, "/v1/terminal/ssh-key", token: try await harness.admin(tenant: victim))
            #expect(mine["publicKey"] as? String == (try harness.tenantKey()))
            #expect(theirs["publicKey"] as? String == (try harness.tenantKey(victim)))
            #expect(
                (mine["fingerprint"] as? String)?.hasPrefix("SHA256:") == true && mine["fingerprint"] as? String != theirs["fingerprint"] as? String
            )

            let victimHost = try await harness.register(client, name: "theirs", tenant: victim)
            let victimPhone = try await harness.token(tenant: victim)
            let (victimSessions, _) = try await harness.sessions(client, token: victimPhone)
            #expect(victimSessions.contains { $0["tmuxSessionName"] as? String == "theirs" }, "the victim lists its own session: \(victimSessions)")

            // The attacker registers the same address, port and user.
            let stolen = try await harness.register(client, name: "stolen")
            let phone = try await harness.token(scopes: [.terminalAttach, .terminalWrite])
            let (sessions, hosts) = try await harness.sessions(client, token: phone)
            #expect(sessions.isEmpty, "\(sessions)")
            let error = hosts.first { $0["hostId"] as? String == stolen }?["error"] as? [String: Any]
            #expect(error?["code"] as? String == "SSHAuthFailed", "\(hosts)")
            let viewer = harness.viewer(client, session: harness.sessionID(host: stolen, name: "theirs"), token: phone, query: "input=true")
            #expect(try await viewer.closed()?.reason == "SSHAuthFailed")
            viewer.close()
            // The victim's host still works for the victim.
            let (stillTheirs, _) = try await harness.sessions(client, token: victimPhone)
            #expect(stillTheirs.contains { $0["sessionId"] as? String == harness.sessionID(host: victimHost, name: "theirs") })
        }
    }

    @Test(
        "the broker reaches only public addresses and terminal.allowed-networks: loopback, the service network and metadata are refused, and no error tells an open port from a closed one"
    )
    func addressPolicy() async throws {
        // Only the test's own sshd address is allowed; 127.0.0.2 (another loopback) is not.
        let harness = try await H(["TERMINAL_ALLOWED_NETWORKS": "127.0.0.1/32"])
        try await harness.run { client in
            let admin = try await harness.admin()
            for address in ["127.0.0.2", "169.254.169.254", "10.0.0.5", "::1", "fe80::1", "::ffff:127.0.0.2", "0.0.0.0"] {
                let body: [String: Any] = ["name": "probe", "address": address, "port": 5432, "username": "u"]
                let (status, answer) = try await LiveCall.call(client, .post, "/v1/terminal/hosts", token: admin, json: body)
                #expect(status == .badRequest && answer.errorCode == "InvalidRequest", "\(address): \(status) \(answer)")
            }
            let phone = try await harness.token()
            // Open ports that are not SSH (Postgres, NATS) and a closed port: one error, one message.
            let postgres = try #require(URL(string: try TestEnvironment.databaseURL)?.port)
            let nats = try #require(URL(string: try TestEnvironment.natsURL)?.port)
            let closed = try freeLoopbackPort()
            var messages: Set<String> = []
            for (name, port) in [("pg", postgres), ("nats", nats), ("closed", closed)] {
                let host = try await harness.register(client, name: name, port: port)
                let (_, hosts) = try await harness.sessions(client, token: phone)
                let error = try #require(hosts.first { $0["hostId"] as? String == host }?["error"] as? [String: Any])
                #expect(error["code"] as? String == "SSHHostUnreachable", "\(name): \(error)")
                messages.insert((error["message"] as? String ?? "").replacingOccurrences(of: ":\(port)", with: ":PORT"))
            }
            #expect(messages.count == 1, "\(messages)")
        }
    }

    @Test("a session name a client chose that could end the shell's quote is never sent to the host: the attach is refused, nothing runs")
    func hostileSessionName() async throws {
        let harness = try await H()
        let marker = harness.sshd.directory.appendingPathComponent("pwned")
        try await harness.run { client in
            let host = try await harness.register(client)
            let phone = try await harness.token(scopes: [.terminalAttach, .terminalWrite])
            for name in [#"\';touch \#(marker.path);#"#, "x'; touch \(marker.path); '", "a!b"] {
                let viewer = harness.viewer(client, session: harness.sessionID(host: host, name: name), token: phone, query: "input=true")
                #expect(try await viewer.closed()?.reason == "InvalidRequest", "\(name)")
                viewer.close()
            }
            try await Task.sleep(for: .milliseconds(500))
            #expect(!FileManager.default.fileExists(atPath: marker.path))
        }
    }

    @Test("bad input: 4xx in the envelope, never 5xx; scopes are checked")
    func badInput() async throws {
        let harness = try await H()
        try await harness.run { client in
            let admin = try await harness.admin()
            let valid: [String: Any] = ["name": "b", "address": "127.0.0.1", "username": "u"]
            let cases: [(String, Any)] = [
                ("name", ""), ("name", "a b"), ("name", String(repeating: "n", count: 65)), ("name", "x;rm"),
                ("address", "-oProxyCommand=x"), ("address", "a b"), ("address", ""), ("port", 0), ("port", 70000),
                ("username", "-l"), ("username", "a'b"), ("username", ""), ("tmuxSocket", "../x"), ("tmuxSocket", ""),
                ("name", 5),
            ]
            for (field, value) in cases {
                var body = valid
                body[field] = value
                let (status, answer) = try await LiveCall.call(client, .post, "/v1/terminal/hosts", token: admin, json: body)
                #expect(status == .badRequest && answer.errorCode == "InvalidRequest", "\(field)=\(value): \(status) \(answer)")
            }
            for raw in ["{", "[]", "null", #"{"name":"x"}"#, String(repeating: "x", count: 20_000)] {
                let (status, answer) = try await LiveCall.call(client, .post, "/v1/terminal/hosts", token: admin, body: raw)
                #expect((400..<500).contains(status.code) && answer.errorCode != nil, "\(raw.prefix(20)): \(status) \(answer)")
            }
            let (noToken, unauthenticated) = try await LiveCall.call(client, .get, "/v1/terminal/sessions")
            #expect(noToken == .unauthorized && unauthenticated.errorCode != nil)
            let phone = try await harness.token()
            let (forbidden, answer) = try await LiveCall.call(client, .post, "/v1/terminal/hosts", token: phone, json: valid)
            #expect(forbidden == .forbidden && answer.errorCode == "PermissionDenied", "\(answer)")
            for id in ["nodot", "h_x.%%%", ".", "h_1.", String(repeating: "a", count: 300) + ".YQ"] {
                let (status, body) = try await LiveCall.call(client, .get, "/v1/terminal/sessions/\(id)", token: phone)
                #expect(status == .notFound && body.errorCode == "NotFound", "\(id): \(status) \(body)")
            }
            let (badLimit, limitAnswer) = try await LiveCall.call(client, .get, "/v1/terminal/audit?limit=0", token: admin)
            #expect(badLimit == .badRequest && limitAnswer.errorCode == "InvalidRequest")
            let host = try await harness.register(client)
            let session = harness.sessionID(host: host, name: "any")
            // The end frames' codes (the close reasons are checked in TerminalErrorTests).
            let badAfter = harness.viewer(client, session: session, token: phone, query: "after=abc")
            #expect(try await badAfter.ended() == "InvalidRequest")
            badAfter.close()
            let wrongProtocol = harness.viewer(client, session: session, token: phone, query: "protocol=2")
            #expect(try await wrongProtocol.ended() == "ProtocolMismatch")
            wrongProtocol.close()
            // A refused upgrade answers its status, so a phone knows to refresh its token (401)
            // or that it may not watch (403), rather than retrying.
            let port = try #require(client.port)
            let attach = "ws://127.0.0.1:\(port)/v1/terminal/sessions/\(session)/attach"
            for (token, status) in [(nil, "401"), ("garbage", "401"), (try await harness.token(scopes: [.streamRead]), "403"), (admin, "403")] {
                do {
                    _ = try await PlainWebSocket.connect(url: attach, bearer: token) { _, _ in }
                    Issue.record("the attach upgraded for \(status)")
                } catch PlainWebSocket.ClientError.notUpgraded(let line) {
                    #expect(line.contains(" \(status) "), "\(status): \(line)")
                }
            }
        }
    }

    @Test("limits: hosts per tenant (409), viewers per session (RateLimited close), input message size (1009 close)")
    func limits() async throws {
        let harness = try await H(["TERMINAL_MAX_HOSTS_PER_TENANT": "2", "TERMINAL_MAX_VIEWERS_PER_SESSION": "1", "TERMINAL_MAX_INPUT_BYTES": "64"])
        try await harness.sshd.newSession("busy")
        try await harness.run { client in
            let host = try await harness.register(client, name: "one")
            _ = try await harness.register(client, name: "two")
            let admin = try await harness.admin()
            let (full, answer) = try await LiveCall.call(
                client,
                .post,
                "/v1/terminal/hosts",
                token: admin,
                json: ["name": "three", "address": "127.0.0.1", "username": "u"]
            )
            #expect(full == .conflict && answer.errorCode == "Conflict", "\(answer)")
            let (taken, duplicate) = try await LiveCall.call(
                client,
                .post,
                "/v1/terminal/hosts",
                token: admin,
                json: ["name": "one", "address": "127.0.0.1", "username": "u"]
            )
            #expect(taken == .conflict && duplicate.errorCode == "Conflict")

            let phone = try await harness.token(scopes: [.terminalAttach, .terminalWrite])
            let session = harness.sessionID(host: host, name: "busy")
            let first = harness.viewer(client, session: session, token: phone, query: "input=true")
            defer { first.close() }
            try await first.wait(for: "a screen") { frames in frames.contains { $0["type"] as? String == "screen" } }
            let second = harness.viewer(client, session: session, token: phone)
            #expect(try await second.ended() == "RateLimited")
            second.close()

            try first.send(["type": "input", "data": String(repeating: "x", count: 4096)])
            let close = try await first.closed()
            #expect(close?.closeCode == .messageTooLarge, "\(String(describing: close))")
            try await Task.sleep(for: .milliseconds(200))
            #expect(!(try await harness.sshd.capture("busy")).contains("xxxxxxxxxxxxxxxx"))
        }
    }
}

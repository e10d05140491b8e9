import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import TerminalBroker

@Suite("terminal-broker's errors a user can act on, in the envelope and as the WebSocket's close reason (live, real sshd)")
struct TerminalErrorTests {
    typealias H = TerminalHarness

    /// The host listing's error code for `host`.
    static func listingError(_ harness: H, _ client: any TestClientProtocol, token: String, host: String) async throws -> String? {
        let (_, hosts) = try await harness.sessions(client, token: token)
        let listing = try #require(hosts.first { $0["hostId"] as? String == host }, "\(hosts)")
        return (listing["error"] as? [String: Any])?["code"] as? String
    }

    @Test("a changed host key blocks listing and attaching with SSHHostKeyMismatch until an administrator resets trust (audited)")
    func hostKeyChanged() async throws {
        let harness = try await H(["TERMINAL_MAX_BACKOFF_SECONDS": "1"])
        try await harness.sshd.newSession("work")
        try await harness.run { client in
            let host = try await harness.register(client)
            let phone = try await harness.token()
            let admin = try await harness.admin()
            #expect(try await Self.listingError(harness, client, token: phone, host: host) == nil, "the first use pins the key")
            let (_, pinned) = try await LiveCall.call(client, .get, "/v1/terminal/hosts/\(host)/key", token: admin)
            let firstKey = try #require(pinned["pinnedKey"] as? String)
            #expect(firstKey.hasPrefix("ssh-ed25519 "))

            harness.sshd.stop()
            try harness.sshd.newHostKey()
            try harness.sshd.start()
            var code: String?
            _ = await eventually(timeout: .seconds(10)) {
                code = try? await Self.listingError(harness, client, token: phone, host: host)
                return code == "SSHHostKeyMismatch"
            }
            #expect(code == "SSHHostKeyMismatch")
            let viewer = harness.viewer(client, session: harness.sessionID(host: host, name: "work"), token: phone)
            // Refused at once (the mismatch is held for the backoff): the end frame says why.
            #expect(try await viewer.ended() == "SSHHostKeyMismatch")
            viewer.close()
            let (status, body) = try await LiveCall.call(
                client,
                .get,
                "/v1/terminal/sessions/\(harness.sessionID(host: host, name: "work"))",
                token: phone
            )
            #expect(status == .conflict && body.errorCode == "SSHHostKeyMismatch", "\(status) \(body)")

            let (reset, _) = try await LiveCall.call(client, .post, "/v1/terminal/hosts/\(host)/trust-reset", token: admin)
            #expect(reset == .noContent)
            #expect(try await Self.listingError(harness, client, token: phone, host: host) == nil, "trusted again after the reset")
            let (_, repinned) = try await LiveCall.call(client, .get, "/v1/terminal/hosts/\(host)/key", token: admin)
            #expect(repinned["pinnedKey"] as? String != firstKey)
            let (_, audit) = try await LiveCall.call(client, .get, "/v1/terminal/audit", token: admin)
            let actions = (audit["entries"] as? [[String: Any]] ?? []).compactMap { $0["action"] as? String }
            #expect(actions.contains("hostkey.mismatch") && actions.contains("hostkey.reset"), "\(actions)")
        }
    }

    @Test("a key the host does not authorize gives SSHAuthFailed; a closed port SSHHostUnreachable; a missing session TmuxSessionNotFound")
    func authUnreachableMissing() async throws {
        let harness = try await H()
        try await harness.sshd.newSession("present")
        try harness.sshd.authorize(try harness.sshd.strangerKey())
        try await harness.run { client in
            let phone = try await harness.token()
            let refused = try await harness.register(client, name: "refuses")
            #expect(try await Self.listingError(harness, client, token: phone, host: refused) == "SSHAuthFailed")
            let viewer = harness.viewer(client, session: harness.sessionID(host: refused, name: "present"), token: phone)
            #expect(try await viewer.closed()?.reason == "SSHAuthFailed")

            let closedPort = try freeLoopbackPort()
            let nowhere = try await harness.register(client, name: "nowhere", port: closedPort)
            #expect(try await Self.listingError(harness, client, token: phone, host: nowhere) == "SSHHostUnreachable")
            let (status, body) = try await LiveCall.call(
                client,
                .get,
                "/v1/terminal/sessions/\(harness.sessionID(host: nowhere, name: "x"))",
                token: phone
            )
            #expect(status.code == 502 && body.errorCode == "SSHHostUnreachable", "\(status) \(body)")
            #expect(body["error"].flatMap { ($0 as? [String: Any])?["retryable"] as? Bool } == true)

            try harness.authorizeTenant()
            let good = try await harness.register(client, name: "good")
            let missing = harness.viewer(client, session: harness.sessionID(host: good, name: "absent"), token: phone)
            #expect(try await missing.closed()?.reason == "TmuxSessionNotFound")
            let (notFound, envelope) = try await LiveCall.call(
                client,
                .get,
                "/v1/terminal/sessions/\(harness.sessionID(host: good, name: "absent"))",
                token: phone
            )
            #expect(notFound == .notFound && envelope.errorCode == "TmuxSessionNotFound", "\(envelope)")
        }
    }
}

import Foundation
import HummingbirdTesting
import ServiceHarnesses
import TestSupport
import Testing

/// Seed 002's phone finding its terminals (§13.2), against a real sshd and tmux.
@Suite("Seed 002's phone against terminal-broker: GET /v1/terminal/sessions is its list (live, real sshd)")
struct Seed002ContractTests {
    typealias H = TerminalHarness

    /// Seed 002 §13.2: `[{ sessionId, displayName, hostnameOrIP, port, username, tmuxSessionName, agentId?, swarmId? }]`.
    struct TerminalSession: Decodable {
        var sessionId: String
        var displayName: String
        var hostnameOrIP: String
        var port: Int
        var username: String
        var tmuxSessionName: String
        var agentId: String?
        var swarmId: String?
    }

    @Test(
        "the answer decodes as the seed's array, with the agent a session names; a host that cannot be listed adds nothing and says why in GET /v1/terminal/hosts?listing=true"
    )
    func sessionsAsTheSeedLists() async throws {
        let harness = try await H()
        try await harness.sshd.newSession("plain")
        try await harness.sshd.newSession("mapped")
        _ = try harness.sshd.tmux(["set-option", "-t", "mapped", "@swarmdeck-agent", "agent-7"])
        _ = try harness.sshd.tmux(["set-option", "-t", "mapped", "@swarmdeck-swarm", "swarm-2"])
        try await harness.run { client in
            _ = try await harness.register(client)
            let closed = try freeLoopbackPort()
            let unreachable = try await harness.register(client, name: "gone", port: closed)
            let phone = try await harness.token()
            let sessions = try await client.execute(uri: "/v1/terminal/sessions", method: .get, headers: [.authorization: "Bearer \(phone)"]) {
                response in
                #expect(response.status == .ok)
                return try JSONDecoder().decode([TerminalSession].self, from: Data(buffer: response.body))
            }
            #expect(Set(sessions.map(\.tmuxSessionName)) == ["plain", "mapped"], "\(sessions)")
            let mapped = try #require(sessions.first { $0.tmuxSessionName == "mapped" })
            #expect(mapped.agentId == "agent-7" && mapped.swarmId == "swarm-2")
            #expect(mapped.hostnameOrIP == "127.0.0.1" && mapped.port == harness.sshd.port && mapped.username == harness.sshd.username)
            #expect(sessions.first { $0.tmuxSessionName == "plain" }?.agentId == nil)

            let (status, hosts) = try await LiveCall.call(client, .get, "/v1/terminal/hosts?listing=true", token: phone)
            #expect(status == .ok)
            let gone = (hosts["hosts"] as? [[String: Any]])?.first { $0["hostId"] as? String == unreachable }
            let listing = gone?["listing"] as? [String: Any]
            #expect(listing?["status"] as? String == "error", "\(hosts)")
            #expect((listing?["error"] as? [String: Any])?["code"] as? String == "SSHHostUnreachable", "\(hosts)")
            // Without listing=true no host is asked.
            let (_, plain) = try await LiveCall.call(client, .get, "/v1/terminal/hosts", token: phone)
            #expect((plain["hosts"] as? [[String: Any]])?.allSatisfy { $0["listing"] == nil } == true, "\(plain)")
        }
    }
}

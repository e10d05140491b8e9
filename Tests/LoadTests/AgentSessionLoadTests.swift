import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import ControlAPI

@Suite("Agent sessions by the ten thousand (live NATS and Postgres)", .tags(.heavy))
struct AgentSessionLoadTests {
    typealias H = ControlHarness

    @Test(
        "10,000 agent ids from one tenant's key: 50 sessions (control.max-agent-sessions), 429 past them, one queue each, no thread per waiting poll; another tenant still gets its commands"
    )
    func capped() async throws {
        let harness = try await ControlHarness(["CONTROL_MAX_AGENT_SESSIONS": "50", "CONTROL_AGENT_SESSIONS_PER_MINUTE": "100000"])
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                for worker in 0..<16 {
                    group.addTask {
                        var statuses: [Int] = []
                        for index in stride(from: worker, to: 10_000, by: 16) {
                            let (status, body) = try await H.call(
                                control,
                                .post,
                                "/v1/agent/sessions",
                                token: key,
                                json: ["swarmId": "flood", "agentId": "a\(index)"]
                            )
                            if status == .tooManyRequests { #expect(body.errorCode == "RateLimited") }
                            statuses.append(status.code)
                        }
                        return statuses
                    }
                }
                var all: [Int] = []
                for try await statuses in group { all += statuses }
                return all
            }
            // Past the cap every answer is 429; one whose store did not answer in time on a
            // starved machine is 503 (retry), never a session more.
            let counts = Dictionary(statuses.map { ($0, 1) }, uniquingKeysWith: +)
            #expect(statuses.filter { $0 == 201 }.count == 50, "\(counts)")
            #expect(statuses.filter { $0 == 429 || $0 == 503 }.count == 10_000 - 50, "\(counts)")
            #expect(statuses.filter { $0 == 429 }.count >= 9_000, "\(counts)")
            #expect(try await harness.commandQueues() == 50)
            #expect(try await harness.controlStreamConsumers() == 0)

            // Another tenant is not held back: its agent opens a session and gets its command.
            let otherTenant = "other-" + harness.tenant
            let otherKey = try await harness.createKey(ingest, tenant: otherTenant)
            let session = try await H.openSession(control, key: otherKey, swarm: "s1", agent: "theirs")
            let token = try await harness.token(tenant: otherTenant, scopes: [.agentsControl])
            let polled = Task {
                let (_, list) = try await H.call(control, .get, "/v1/agent/commands?waitSeconds=20", token: session)
                return (list["commands"] as? [[String: Any]])?.first?["requestId"] as? String
            }
            let (accepted, _) = try await H.call(
                control,
                .post,
                "/v1/swarms/s1/control",
                token: token,
                json: ["action": "pause", "reason": "still served", "requestId": "other-1"]
            )
            #expect(accepted == .accepted)
            #expect(try await polled.value == "other-1")
        }
    }
}

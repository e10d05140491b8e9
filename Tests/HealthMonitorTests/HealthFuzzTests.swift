import Contracts
import Foundation
import HummingbirdTesting
import ServiceKit
import TestSupport
import Testing

@Suite("Health-monitor fuzzed from its OpenAPI document (schemathesis, live NATS and Postgres)", .tags(.heavy))
struct HealthFuzzTests {
    @Test("no generated request gets a 5xx, or a status the document does not list, from any operation")
    func noServerErrors() async throws {
        let harness = try await HealthHarness()
        try await harness.run { ingest, _, health in
            // Something to find: a session near capacity, a skill, an incident.
            let key = try await harness.live.createKey(ingest)
            try await harness.post(
                ingest,
                key: key,
                [
                    ["kind": "usage", "swarmId": "w", "agentId": "a", "inputTokens": 190_000, "outputTokens": 1, "attrs": ["session.id": "s1"]],
                    ["kind": "tool_call", "swarmId": "w", "agentId": "a", "tool": "Bash", "ok": false, "error": "exit 1", "latencyMs": 40],
                ]
            )
            let token = try await harness.token(scopes: Set(Scope.allCases))
            _ = try await HealthHarness.incident(health, token: token, rule: "context_near_capacity")
            let seed = Int.random(in: 1..<1_000_000)
            let (status, report) = try await Schemathesis.run(
                port: try #require(health.port),
                authorization: "Bearer \(token)",
                pathRegex: "^/v1/",
                seed: seed
            )
            #expect(status == 0, "schemathesis (seed \(seed)) found failures:\n\(report)")
        }
    }
}

import Contracts
import Foundation
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@Suite("Health-monitor: tenant isolation, bad input in the envelope, every limit (live)")
struct HealthIsolationTests {
    typealias H = HealthHarness
    typealias JSON = [String: Any]

    @Test("another tenant's sessions, skills, incidents and thresholds answer as if they did not exist")
    func isolation() async throws {
        let harness = try await H()
        try await harness.run { ingest, _, health in
            let key = try await harness.live.createKey(ingest)
            let token = try await harness.token()
            try await H.setThresholds(health, token: token, ["nearCapacityPercent": 50])
            try await harness.post(
                ingest,
                key: key,
                [
                    ["kind": "usage", "swarmId": "w", "agentId": "a", "inputTokens": 150_000, "outputTokens": 1, "attrs": ["session.id": "mine"]],
                    ["kind": "tool_call", "swarmId": "w", "agentId": "a", "tool": "Read", "ok": true],
                ]
            )
            let incident = try #require(try await H.incident(health, token: token, rule: "context_near_capacity"))
            let id = try #require(incident["id"] as? String)
            #expect(
                await eventually(timeout: .seconds(10)) {
                    (try? await H.get(health, "/v1/skill-health", token: token).1["skills"] as? [JSON])?.count == 1
                }
            )
            let skillID = try #require(
                (try await H.get(health, "/v1/skill-health", token: token).1["skills"] as? [JSON])?.first?["skillId"] as? String
            )

            let other = try await harness.token(tenant: "other-" + harness.tenant)
            for path in ["/v1/context-health/mine", "/v1/skill-health/\(skillID)", "/v1/incidents/\(id)"] {
                let (status, body) = try await H.get(health, path, token: other)
                #expect(status == .notFound && body.errorCode == "NotFound", "\(path): \(status) \(body)")
            }
            for path in ["/v1/context-health", "/v1/skill-health", "/v1/swarm-health", "/v1/incidents?status=all"] {
                let (status, body) = try await H.get(health, path, token: other)
                let items = (body["sessions"] ?? body["skills"] ?? body["swarms"] ?? body["incidents"]) as? [JSON]
                #expect(status == .ok && items?.isEmpty == true, "\(path): \(body)")
            }
            let (ack, _) = try await LiveCall.call(health, .post, "/v1/incidents/\(id)/acknowledge", token: other, json: ["reason": "not mine"])
            #expect(ack == .notFound)
            let (_, thresholds) = try await H.get(health, "/v1/alert-thresholds", token: other)
            #expect((thresholds["tenant"] as? JSON)?["version"] as? Int == 0, "another tenant's thresholds: \(thresholds)")
            // And the owner's incident was not acknowledged by the attempt.
            let (_, detail) = try await H.get(health, "/v1/incidents/\(id)", token: token)
            #expect((detail["incident"] as? JSON)?["acknowledged"] as? Bool == false)
        }
    }

    @Test("bad input: 400 in the envelope; missing scope 403; no token 401")
    func badInput() async throws {
        let harness = try await H()
        try await harness.run(.router) { _, _, health in
            let token = try await harness.token()
            for path in [
                "/v1/skill-health?window=2h", "/v1/incidents?limit=0", "/v1/incidents?limit=201", "/v1/incidents?status=open",
                "/v1/incidents?cursor=garbage", "/v1/context-health?agentId=" + String(repeating: "x", count: 300),
            ] {
                let (status, body) = try await H.get(health, path, token: token)
                #expect(status == .badRequest && body.errorCode == "InvalidRequest", "\(path): \(status) \(body)")
            }
            for values: JSON in [
                ["nearCapacityPercent": 500], ["stuckMinutes": 0], ["loopRepeats": 1], ["unknownKnob": 3], ["forSeconds": -1],
            ] {
                let (status, body) = try await LiveCall.call(health, .put, "/v1/alert-thresholds", token: token, json: ["values": values])
                #expect(status == .badRequest && body.errorCode == "InvalidRequest", "\(values): \(status) \(body)")
            }
            let (both, _) = try await LiveCall.call(
                health,
                .put,
                "/v1/alert-thresholds",
                token: token,
                json: ["values": [:], "swarmId": "a", "skillId": "b"]
            )
            #expect(both == .badRequest)
            let (skillOnly, body) = try await LiveCall.call(
                health,
                .put,
                "/v1/alert-thresholds",
                token: token,
                json: ["values": ["stuckMinutes": 5], "skillId": "sk_1"]
            )
            #expect(skillOnly == .badRequest, "\(body)")
            let (stale, staleBody) = try await LiveCall.call(
                health,
                .put,
                "/v1/alert-thresholds",
                token: token,
                json: ["values": ["loopRepeats": 4], "expectedVersion": 7]
            )
            #expect(stale == .conflict && staleBody.errorCode == "Conflict", "\(staleBody)")
            let (emptyReason, _) = try await LiveCall.call(health, .post, "/v1/incidents/inc_x/acknowledge", token: token, json: ["reason": ""])
            #expect(emptyReason == .badRequest)
            let (unknown, _) = try await LiveCall.call(health, .post, "/v1/incidents/inc_x/acknowledge", token: token, json: ["reason": "x"])
            #expect(unknown == .notFound)
            let reader = try await harness.token(scopes: [.streamRead])
            let (forbidden, forbiddenBody) = try await LiveCall.call(health, .put, "/v1/alert-thresholds", token: reader, json: ["values": [:]])
            #expect(forbidden == .forbidden, "\(forbiddenBody)")
            let (anonymous, _) = try await LiveCall.call(health, .get, "/v1/incidents")
            #expect(anonymous == .unauthorized)
        }
    }

    @Test("limits: tenants per replica (others ignored), threshold changes per minute (429); the per-tenant bounds are HealthRulesTests.bounds")
    func limits() async throws {
        let harness = try await H([
            "HEALTH_MAX_TENANTS": "1", "HEALTH_THRESHOLD_WRITES_PER_MINUTE": "2",
        ])
        try await harness.run { ingest, _, health in
            let key = try await harness.live.createKey(ingest)
            let token = try await harness.token()
            let usage = { (session: String) -> JSON in
                ["kind": "usage", "swarmId": "w", "agentId": "a", "inputTokens": 1000, "outputTokens": 1, "attrs": ["session.id": session]]
            }
            try await harness.post(ingest, key: key, [usage("mine")])
            #expect(await eventually(timeout: .seconds(10)) { (try? await H.get(health, "/v1/context-health/mine", token: token).0) == .ok })
            // A second tenant, past health.max-tenants: not followed.
            let otherTenant = "other-" + harness.tenant
            let otherKey = try await harness.live.createKey(ingest, tenant: otherTenant)
            try await harness.post(ingest, key: otherKey, [usage("theirs")])
            try await Task.sleep(for: .seconds(2))
            let other = try await harness.token(tenant: otherTenant)
            #expect(try await H.get(health, "/v1/context-health/theirs", token: other).0 == .notFound)

            try await H.setThresholds(health, token: token, ["loopRepeats": 3])
            try await H.setThresholds(health, token: token, ["loopRepeats": 4])
            let (status, body) = try await LiveCall.call(health, .put, "/v1/alert-thresholds", token: token, json: ["values": ["loopRepeats": 5]])
            #expect(status == .tooManyRequests && body.errorCode == "RateLimited", "\(status) \(body)")
        }
    }
}

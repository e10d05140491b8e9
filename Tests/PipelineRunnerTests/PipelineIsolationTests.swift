import Contracts
import Foundation
import HummingbirdTesting
import NIOCore
import PipelineRunner
import ServiceHarnesses
import TestSupport
import Testing

private typealias H = PipelineHarness

@Suite("pipeline-runner: tenant isolation and bad input")
struct PipelineIsolationTests {
    @Test("another tenant's pipelines and artifacts answer as if they did not exist")
    func tenantIsolation() async throws {
        let harness = try await PipelineHarness()
        defer { Task { await harness.stop() } }
        try await harness.run { ingest, control, _, pipelines in
            let (status, created) = try await harness.create(pipelines, ["goal": "Mine", "unattended": true])
            #expect(status == .created)
            let id = try #require(created["pipelineId"] as? String)
            let done = try await harness.waitFor(pipelines, id) { $0["status"] as? String == "completed" }
            let artifact = try #require(H.stage(done, 1)["artifactId"] as? String)
            let other = try await harness.token(tenant: "other-" + harness.tenant)
            for path in ["/v1/pipelines/\(id)", "/v1/pipelines/\(id)/artifacts", "/v1/pipelines/\(id)/artifacts/\(artifact)"] {
                let (status, answer) = try await LiveCall.call(pipelines, .get, path, token: other)
                #expect(status == .notFound, "\(path): \(status)")
                #expect(answer.errorCode == "NotFound")
            }
            let (_, list) = try await LiveCall.call(pipelines, .get, "/v1/pipelines", token: other)
            #expect((list["pipelines"] as? [H.JSON])?.isEmpty == true)
            // Agents cannot pose as the pipelines: ingest refuses their swarm and the services'
            // msgIds, control-api a session in their swarm.
            let key = try await harness.live.createKey(ingest)
            let (_, posed) = try await harness.live.postEvents(
                ingest,
                key: key,
                [
                    ["msgId": "m1", "swarmId": "pipelines", "agentId": id, "kind": "state", "state": "completed"],
                    ["msgId": "svc-\(id)-done-0", "swarmId": "s1", "agentId": "a1", "kind": "state", "state": "running"],
                ]
            )
            let answer = try JSONSerialization.jsonObject(with: Data(buffer: posed)) as? H.JSON ?? [:]
            #expect(answer["rejected"] as? Int == 2, "\(answer)")
            let (session, refused) = try await LiveCall.call(
                control,
                .post,
                "/v1/agent/sessions",
                token: key,
                json: ["swarmId": "pipelines", "agentId": id]
            )
            #expect(session == .badRequest, "\(refused)")
            // The same idempotency key in another tenant is another pipeline.
            let (first, mine) = try await harness.create(pipelines, ["goal": "Keyed", "idempotencyKey": "shared-key"])
            let (again, repeated) = try await harness.create(pipelines, ["goal": "Keyed", "idempotencyKey": "shared-key"])
            #expect(first == .created && again == .ok)
            #expect(mine["pipelineId"] as? String == repeated["pipelineId"] as? String)
        }
    }

    @Test("bad input is a 4xx in the envelope; no credential 401, a missing scope 403")
    func badInput() async throws {
        let harness = try await PipelineHarness(["PIPELINE_MAX_ACTIVE_PER_TENANT": "2", "PIPELINE_CREATES_PER_MINUTE": "1000"])
        defer { Task { await harness.stop() } }
        try await harness.run { _, _, _, pipelines in
            let token = try await harness.token()
            let cases: [(String, String)] = [
                (#"{}"#, "no goal"),
                (#"{"goal": ""}"#, "empty goal"),
                (#"{"goal": "\#(String(repeating: "x", count: 4001))"}"#, "goal too long"),
                (#"{"goal": "g", "title": "\#(String(repeating: "t", count: 201))"}"#, "title too long"),
                (#"{"goal": "g", "roles": {"producer": {"model": "gpt-4"}}}"#, "unknown model"),
                (#"{"goal": "g", "roles": {"planner": {"temperature": 2}}}"#, "temperature"),
                (#"{"goal": "g", "export": true}"#, "export off"),
                (#"{"goal": "g", "idempotencyKey": "has space"}"#, "bad key"),
                (#"{"goal": 3}"#, "goal not a string"),
                (#"{"goal": "g""#, "broken JSON"),
            ]
            for (body, what) in cases {
                let (status, answer) = try await LiveCall.call(pipelines, .post, "/v1/pipelines", token: token, body: body)
                #expect(status == .badRequest, "\(what): \(status) \(answer)")
                #expect(answer.errorCode == "InvalidRequest", "\(what): \(answer)")
            }
            for path in ["/v1/pipelines/nope", "/v1/pipelines/x%2Fy/artifacts", "/v1/pipelines/\(String(repeating: "a", count: 65))"] {
                let (status, _) = try await LiveCall.call(pipelines, .get, path, token: token)
                #expect(status == .notFound, "\(path)")
            }
            let (limit, _) = try await LiveCall.call(pipelines, .get, "/v1/pipelines?limit=0", token: token)
            #expect(limit == .badRequest)
            let (cursor, _) = try await LiveCall.call(pipelines, .get, "/v1/pipelines?before=garbage", token: token)
            #expect(cursor == .badRequest)
            let (anonymous, _) = try await LiveCall.call(pipelines, .post, "/v1/pipelines", json: ["goal": "g"])
            #expect(anonymous == .unauthorized)
            let reader = try await harness.token(scopes: [.streamRead])
            let (forbidden, _) = try await LiveCall.call(pipelines, .post, "/v1/pipelines", token: reader, json: ["goal": "g"])
            #expect(forbidden == .forbidden)

            // The active cap: two attended pipelines wait on their gates; a third is refused.
            for index in 0..<2 {
                let (status, _) = try await harness.create(pipelines, ["goal": "Held \(index)"])
                #expect(status == .created)
            }
            let (capped, answer) = try await harness.create(pipelines, ["goal": "One too many"])
            #expect(capped == .tooManyRequests)
            #expect(answer.errorCode == "RateLimited")
        }
    }

    @Test("the creates-per-minute limit answers 429 with Retry-After")
    func createRate() async throws {
        let harness = try await PipelineHarness(["PIPELINE_CREATES_PER_MINUTE": "2"])
        defer { Task { await harness.stop() } }
        try await harness.run { _, _, _, pipelines in
            // Two at once, then one every 30 s: counted against the time the creates took.
            let bucket = BucketProbe(perMinute: 2)
            var refusal: (Int, [String: Any]) = (0, [:])
            let (admitted, refused) = try await bucket.untilRefused { index in
                let (status, answer) = try await harness.create(pipelines, ["goal": "Rate \(index)", "unattended": true])
                if status != .created { refusal = (status.code, answer) }
                return status == .created
            }
            #expect(refused && bucket.fits(admitted), "\(admitted) created in \(bucket.seconds) s at 2 a minute")
            #expect(refusal.0 == 429 && refusal.1.errorCode == "RateLimited", "\(refusal)")
        }
    }

    @Test("the creates-per-minute limit holds across replicas: two runners admit the configured 2 of 6, not 4; another tenant still creates")
    func createRateAcrossReplicas() async throws {
        let harness = try await PipelineHarness(["PIPELINE_CREATES_PER_MINUTE": "2"])
        defer { Task { await harness.stop() } }
        try await harness.run { _, _, _, first in
            try await harness.live.application(PipelineRunnerService.self).test(.router) { second in
                var statuses: [Int] = []
                let started = ContinuousClock.now
                for index in 0..<6 {
                    let (status, _) = try await harness.create(index % 2 == 0 ? first : second, ["goal": "Shared rate \(index)", "unattended": true])
                    statuses.append(status.code)
                }
                // The bucket gives one back every 30 s: a loaded machine's slow run may see one.
                let refills = Int((ContinuousClock.now - started) / .seconds(30))
                // Each replica alone would let two through: four in all.
                let created = statuses.filter { $0 == 201 }.count
                #expect(created >= 2 && created <= 2 + refills, "\(statuses)")
                #expect(Array(statuses.prefix(2)) == [201, 201] && statuses.allSatisfy { $0 == 201 || $0 == 429 }, "\(statuses)")
                let (other, _) = try await harness.create(second, ["goal": "Another tenant", "unattended": true], tenant: "other-tenant")
                #expect(other == .created)
            }
        }
    }
}

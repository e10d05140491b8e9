import AnthropicLocal
import Contracts
import Foundation
import HummingbirdTesting
import ServiceHarnesses
import StreamTestSupport
import Synchronization
import TestSupport
import Testing

private typealias H = PipelineHarness

@Suite("pipeline-runner against the real stack and the local provider")
struct PipelineLiveTests {
    @Test("unattended: three stages approved as they finish, seed 001's costs to the cent, artifacts stored, every step on /v1/stream, in the fleet")
    func unattended() async throws {
        let harness = try await PipelineHarness()
        defer { Task { await harness.stop() } }
        try await harness.runWithStream { _, control, _, pipelines, fanout in
            let token = try await harness.token()
            let client = StreamClient(port: try #require(fanout.port), token: token)
            // The frames cross tasks as JSON.
            let stream = Task {
                let run = try await client.run(
                    sending: [subscribe(lastEventId: 0, filters: ["swarmIds": ["pipelines"]])],
                    timeout: .seconds(60)
                ) { frame in frame["type"] as? String == "state" && frame["state"] as? String == "completed" }
                return try JSONSerialization.data(withJSONObject: run.frames.events)
            }
            let (status, created) = try await harness.create(pipelines, ["goal": "Compare the top AI coding tools", "unattended": true])
            #expect(status == .created, "\(created)")
            let id = try #require(created["pipelineId"] as? String)
            #expect(H.stages(created).map { $0["role"] as? String } == ["researcher", "producer", "qaReviewer"])
            #expect(created["swarmId"] as? String == "pipelines")

            let done = try await harness.waitFor(pipelines, id) { $0["status"] as? String == "completed" }
            let planner = try #require(done["planner"] as? H.JSON)
            var total = try #require(Seed001.cost(planner))
            for stage in H.stages(done) {
                #expect(stage["status"] as? String == "approved")
                #expect(stage["decidedBy"] as? String == "unattended")
                #expect(stage["attempt"] as? Int == 1)
                let usage = try #require(stage["usage"] as? H.JSON)
                let cost = try #require((usage["costUsd"] as? NSNumber)?.doubleValue)
                let expected = try #require(Seed001.cost(usage))
                #expect(
                    (cost * 100).rounded() == (expected * 100).rounded() && abs(cost - expected) < 1e-9,
                    "stage cost \(cost) vs seed formula \(expected)"
                )
                #expect((usage["outputTokens"] as? Int ?? 0) > 0)
                total += expected
            }
            #expect(abs(((done["costUsd"] as? NSNumber)?.doubleValue ?? -1) - total) < 1e-9)

            let (listed, artifacts) = try await LiveCall.call(pipelines, .get, "/v1/pipelines/\(id)/artifacts", token: token)
            #expect(listed == .ok)
            let list = artifacts["artifacts"] as? [H.JSON] ?? []
            #expect(list.map { $0["position"] as? Int } == [1, 2, 3])
            let first = try #require(list.first?["artifactId"] as? String)
            let markdown = try await pipelines.execute(
                uri: "/v1/pipelines/\(id)/artifacts/\(first)",
                method: .get,
                headers: [.authorization: "Bearer \(token)"]
            ) {
                response in (response.status, response.headers[.contentType], String(buffer: response.body))
            }
            #expect(markdown.0 == .ok)
            #expect(markdown.1?.hasPrefix("text/markdown") == true)
            #expect(markdown.2.hasPrefix("## "))

            let frames = try JSONSerialization.jsonObject(with: try await stream.value) as? [H.JSON] ?? []
            let logs = frames.ofType("log").filter { $0["agentId"] as? String == id }
            let names = logs.compactMap { $0["event"] as? String }
            #expect(names.filter { $0 == "stageStarted" }.count == 3, "\(names)")
            #expect(names.filter { $0 == "stageFinished" }.count == 3)
            #expect(names.filter { $0 == "artifact" }.count == 3)
            #expect(names.contains("output"))
            #expect(frames.ofType("usage").filter { $0["agentId"] as? String == id }.count == 4)
            // The output events, joined, are the artifacts' text.
            let output = logs.filter { $0["event"] as? String == "output" && $0["stage"] as? Int == 1 }.compactMap { $0["message"] as? String }
                .joined()
            #expect(output == markdown.2)

            // The pipeline is an agent of the fleet.
            let (found, agent) = try await LiveCall.call(control, .get, "/v1/agents/\(id)", token: token)
            #expect(found == .ok, "\(agent)")
        }
    }

    @Test("attended: a gate after each stage; approve goes on, reject stops the pipeline with the reason")
    func attended() async throws {
        let harness = try await PipelineHarness()
        defer { Task { await harness.stop() } }
        try await harness.run { _, _, approvals, pipelines in
            let (status, created) = try await harness.create(pipelines, ["goal": "Write a release note"])
            #expect(status == .created, "\(created)")
            let id = try #require(created["pipelineId"] as? String)
            var pipeline = try await harness.waitFor(pipelines, id) { H.stage($0, 1)["gateId"] != nil }
            #expect(pipeline["status"] as? String == "awaitingApproval")
            #expect(H.stage(pipeline, 2)["status"] as? String == "waiting")
            try await harness.decide(approvals, gate: try #require(H.stage(pipeline, 1)["gateId"] as? String), approve: true)
            pipeline = try await harness.waitFor(pipelines, id) { H.stage($0, 2)["gateId"] != nil }
            #expect(H.stage(pipeline, 1)["status"] as? String == "approved")
            #expect(H.stage(pipeline, 1)["decidedBy"] as? String == "operator")
            try await harness.decide(
                approvals,
                gate: try #require(H.stage(pipeline, 2)["gateId"] as? String),
                approve: false,
                reason: "the tone is wrong"
            )
            pipeline = try await harness.waitFor(pipelines, id) { $0["status"] as? String == "failed" }
            let error = pipeline["error"] as? H.JSON
            #expect(error?["code"] as? String == "UserRejected")
            #expect(error?["message"] as? String == "Pipeline stopped: the tone is wrong")
            #expect(H.stage(pipeline, 2)["status"] as? String == "rejected")
            #expect(H.stage(pipeline, 3)["status"] as? String == "waiting")
        }
    }

    @Test("pause lets the call in flight finish, then holds; resume goes on; terminate cancels the call in flight; control-api records each outcome")
    func pauseResumeTerminate() async throws {
        let harness = try await PipelineHarness()
        defer { Task { await harness.stop() } }
        try await harness.run { _, control, _, pipelines in
            let token = try await harness.token()
            // 40 words a delta of 5, 600 ms apart: a stage streams for about 5 s, time enough for a
            // command to arrive on a loaded machine.
            let (status, created) = try await harness.create(pipelines, ["goal": "Slow work [delay-ms:600]", "unattended": true])
            #expect(status == .created, "\(created)")
            let id = try #require(created["pipelineId"] as? String)
            _ = try await harness.waitFor(pipelines, id) { H.stage($0, 1)["status"] as? String == "running" }
            let pause = try await harness.control(control, id, "pause")
            var pipeline = try await harness.waitFor(pipelines, id) { H.stage($0, 1)["status"] as? String == "approved" }
            #expect(pipeline["paused"] as? Bool == true)
            try await Task.sleep(for: .seconds(2))
            pipeline = try await harness.pipeline(pipelines, id)
            #expect(H.stage(pipeline, 2)["status"] as? String == "waiting", "a paused pipeline starts no stage: \(pipeline)")
            let (_, receipt) = try await LiveCall.call(control, .get, "/v1/controls/\(pause)", token: token)
            let commands = receipt["commands"] as? [H.JSON] ?? []
            #expect(commands.first?["state"] as? String == "applied", "\(receipt)")

            try await harness.control(control, id, "resume")
            pipeline = try await harness.waitFor(pipelines, id) { H.stage($0, 2)["status"] as? String == "running" }
            #expect(pipeline["paused"] as? Bool == false)
            let terminate = try await harness.control(control, id, "terminate")
            pipeline = try await harness.waitFor(pipelines, id, seconds: 10) { $0["status"] as? String == "stopped" }
            #expect(H.stage(pipeline, 2)["status"] as? String == "stopped")
            #expect((pipeline["error"] as? H.JSON)?["code"] as? String == "Terminated")
            // The call was cancelled: no artifact for stage 2, ever.
            try await Task.sleep(for: .seconds(2))
            let (_, artifacts) = try await LiveCall.call(pipelines, .get, "/v1/pipelines/\(id)/artifacts", token: token)
            #expect((artifacts["artifacts"] as? [H.JSON] ?? []).map { $0["position"] as? Int } == [1])
            var recorded: String?
            for _ in 0..<50 {
                let (_, receipt) = try await LiveCall.call(control, .get, "/v1/controls/\(terminate)", token: token)
                recorded = (receipt["commands"] as? [H.JSON])?.first?["state"] as? String
                if recorded != "pending" { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(recorded == "applied")
        }
    }

    @Test("a runner stopped mid-stage: another resumes the stage as a new attempt, and no stage has two artifacts")
    func runnerStoppedMidStage() async throws {
        let harness = try await PipelineHarness()
        defer { Task { await harness.stop() } }
        try await harness.run { _, _, _, first in
            let (status, created) = try await harness.create(first, ["goal": "Long work [delay-ms:300]", "unattended": true])
            #expect(status == .created, "\(created)")
            let id = try #require(created["pipelineId"] as? String)
            _ = try await harness.waitFor(first, id) { H.stage($0, 1)["status"] as? String == "running" }
            // Leaving this closure stops the first runner with the stage's call in flight.
            Carried.id.withLock { $0 = id }
        }
        let id = try #require(Carried.id.withLock { $0 })
        try await harness.run { _, _, _, second in
            let done = try await harness.waitFor(second, id, seconds: 60) { $0["status"] as? String == "completed" }
            #expect(H.stage(done, 1)["attempt"] as? Int == 2)
            let (_, artifacts) = try await LiveCall.call(second, .get, "/v1/pipelines/\(id)/artifacts", token: try await harness.token())
            let list = artifacts["artifacts"] as? [H.JSON] ?? []
            #expect(list.map { $0["position"] as? Int } == [1, 2, 3], "\(list)")
            #expect(list.first?["attempt"] as? Int == 2)
        }
    }

    @Test(
        "the provider: 429 with retry-after is retried and succeeds; persistent 529 ends in ProviderError; no key is ProviderKeyMissing; prose is NoPipeline"
    )
    func providerFailures() async throws {
        let harness = try await PipelineHarness()
        defer { Task { await harness.stop() } }
        try await harness.run { _, _, _, pipelines in
            harness.provider.enqueue(.status(429, retryAfterSeconds: 1))
            let before = harness.provider.requestCount
            let (status, created) = try await harness.create(pipelines, ["goal": "Retry me", "unattended": true])
            #expect(status == .created, "\(created)")
            #expect(harness.provider.requestCount - before >= 2)

            let (prose, refusal) = try await harness.create(pipelines, ["goal": "Just chat [conversational]"])
            #expect(prose.code == 422)
            #expect(refusal.errorCode == "NoPipeline")
            #expect(((refusal["error"] as? H.JSON)?["details"] as? H.JSON)?["rawText"] as? String != nil)

            let (overloadedStatus, overloaded) = try await harness.create(pipelines, ["goal": "Always overloaded [fault:529]"])
            #expect(overloadedStatus.code == 502)
            #expect(overloaded.errorCode == "ProviderError")
            #expect(((overloaded["error"] as? H.JSON)?["message"] as? String)?.contains("Server error") == true)

            // A stage that keeps getting 529 ends the pipeline with the mapped error.
            let (_, stageCreated) = try await harness.create(
                pipelines,
                ["goal": "Stage fails", "unattended": true, "roles": ["researcher": ["systemPrompt": "You research. [fault:529]"]]]
            )
            let id = try #require(stageCreated["pipelineId"] as? String)
            let failed = try await harness.waitFor(pipelines, id) { $0["status"] as? String == "failed" }
            #expect((failed["error"] as? H.JSON)?["code"] as? String == "ProviderError")
            #expect(H.stage(failed, 1)["status"] as? String == "failed")

            let (_, list) = try await LiveCall.call(pipelines, .get, "/v1/pipelines", token: try await harness.token())
            #expect((list["pipelines"] as? [H.JSON] ?? []).count == 2, "the conversational and overloaded plans made no pipeline")
        }
        let keyless = try await PipelineHarness(key: nil)
        defer { Task { await keyless.stop() } }
        try await keyless.run { _, _, _, pipelines in
            let (status, answer) = try await keyless.create(pipelines, ["goal": "No key"])
            #expect(status.code == 503)
            #expect(answer.errorCode == "ProviderKeyMissing")
            #expect(((answer["error"] as? H.JSON)?["message"] as? String)?.contains("API key not set") == true)
            #expect(keyless.provider.requestCount == 0)
        }
    }

    @Test("a research URL on loopback or a private address is refused, and the stage goes on without it")
    func researchRefusesInternalAddresses() async throws {
        let harness = try await PipelineHarness()
        defer { Task { await harness.stop() } }
        try await harness.run { _, _, _, pipelines in
            let target = "\(harness.provider.baseURL)/internal-secret"
            let (status, created) = try await harness.create(
                pipelines,
                ["goal": "Summarize \(target) and http://169.254.169.254/latest/meta-data", "unattended": true]
            )
            #expect(status == .created, "\(created)")
            let id = try #require(created["pipelineId"] as? String)
            let pipeline = try await harness.waitFor(pipelines, id) { H.stage($0, 1)["status"] as? String == "approved" }
            let fetches = H.stage(pipeline, 1)["fetches"] as? [H.JSON] ?? []
            #expect(fetches.count == 2, "\(fetches)")
            #expect(fetches.allSatisfy { $0["status"] as? String == "refused" }, "\(fetches)")
            #expect((fetches.first?["detail"] as? String)?.contains("loopback") == true)
        }
    }
}

/// Carries a value out of one harness run into the next.
private enum Carried {
    static let id = Mutex<String?>(nil)
}

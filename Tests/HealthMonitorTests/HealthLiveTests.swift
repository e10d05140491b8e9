import Contracts
import Foundation
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import StreamFanout
import StreamTestSupport
import Synchronization
import TestSupport
import Testing

@Suite("Health-monitor live: context, skills, stuck agents, loops, thresholds, restarts (live NATS and Postgres)")
struct HealthLiveTests {
    typealias H = HealthHarness
    typealias JSON = [String: Any]

    /// Runs tests/claude-code-otel.py (the real OpenTelemetry SDK) with `lines` on its stdin.
    static func otel(port: Int, key: String, swarm: String, agent: String, session: String, lines: [String]) async throws {
        guard let python = ProcessInfo.processInfo.environment["SWARMDECK_PYTHON"] else {
            throw HarnessError(message: "SWARMDECK_PYTHON is not set: run the tests with ./scripts/test (it installs the OpenTelemetry SDK)")
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("claude-code-otel.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script.path, "http://127.0.0.1:\(port)", key, swarm, agent, session, "claude-sonnet-4-5"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: Data(lines.map { $0 + "\n" }.joined().utf8))
        try input.fileHandleForWriting.close()
        let reader = output.fileHandleForReading
        let text = try await offPool {
            let data = reader.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        #expect(process.terminationStatus == 0 && text.contains("sent \(lines.count)"), "the OpenTelemetry client: \(text)")
    }

    @Test(
        "the OpenTelemetry SDK's Claude Code api_requests: percentage, near-capacity warning and incident (and its frame), resolved by a compaction"
    )
    func contextFromOpenTelemetry() async throws {
        let harness = try await H()
        try await harness.live.application(StreamFanoutService.self).test(.live) { fanout in
            try await harness.run { ingest, _, health in
                let key = try await harness.live.createKey(ingest)
                let token = try await harness.token()
                try await H.setThresholds(health, token: token, ["resolveAfterSeconds": 1])
                let stream = StreamClient(port: try #require(fanout.port), token: token)
                async let streamed = stream.run(sending: [subscribe(filters: ["include": ["incidents"]])], timeout: .seconds(60)) { frame in
                    frame["type"] as? String == "incident" && frame["status"] as? String == "resolved"
                }
                try await Task.sleep(for: .milliseconds(500))
                // 50K + 170K (85%) of 200K: input + cache read + cache creation of the latest request.
                try await Self.otel(
                    port: try #require(ingest.port),
                    key: key,
                    swarm: "cc",
                    agent: "claude-1",
                    session: "sess-1",
                    lines: ["40000 8000 2000", "120000 45000 5000"]
                )
                let incident = try #require(try await H.incident(health, token: token, rule: "context_near_capacity"), "no incident fired")
                #expect(incident["sessionId"] as? String == "sess-1" && incident["agentId"] as? String == "claude-1", "\(incident)")
                #expect(incident["severity"] as? String == "warning")
                #expect((incident["webUrl"] as? String)?.hasSuffix("/incidents/\(incident["id"] as? String ?? "")") == true)
                let session = await eventually(timeout: .seconds(10)) {
                    let (status, body) = (try? await H.get(health, "/v1/context-health/sess-1", token: token)) ?? (.notFound, [:])
                    return status == .ok && body["tokenUsage"] as? Int == 170_000
                }
                #expect(session)
                let (_, context) = try await H.get(health, "/v1/context-health/sess-1", token: token)
                #expect(context["percentUsed"] as? Double == 85 && context["maxTokens"] as? Int == 200_000, "\(context)")
                #expect(context["warnings"] as? [String] == ["near_capacity"])
                #expect((context["series"] as? [JSON])?.count == 2)
                // Seed 000's deep link to the session's page in the console.
                #expect((context["webUrl"] as? String)?.hasSuffix("/sessions/sess-1") == true, "\(context)")
                let (_, list) = try await H.get(health, "/v1/context-health?agentId=claude-1", token: token)
                #expect((list["sessions"] as? [JSON])?.first?["sessionId"] as? String == "sess-1")
                #expect((list["sessions"] as? [JSON])?.first?["webUrl"] as? String == context["webUrl"] as? String)

                // A compaction: the window empties; the incident resolves after the hold-off.
                try await Self.otel(
                    port: try #require(ingest.port),
                    key: key,
                    swarm: "cc",
                    agent: "claude-1",
                    session: "sess-1",
                    lines: ["15000 5000 0"]
                )
                let incidentID = incident["id"] as? String
                let resolved = try await H.incident(health, token: token, rule: "context_near_capacity", status: "resolved") {
                    $0["id"] as? String == incidentID
                }
                #expect(resolved != nil, "not resolved after the compaction")
                #expect(
                    await eventually(timeout: .seconds(10)) {
                        let (_, body) = (try? await H.get(health, "/v1/context-health/sess-1", token: token)) ?? (.notFound, [:])
                        return body["compactions"] as? Int == 1 && (body["warnings"] as? [String])?.isEmpty == true
                    }
                )
                let (status, detail) = try await H.get(health, "/v1/incidents/\(incident["id"] as? String ?? "")", token: token)
                #expect(status == .ok)
                #expect((detail["timeline"] as? [JSON])?.compactMap { $0["action"] as? String } == ["fired", "resolved"])
                let seen = try await streamed.frames.filter { $0["type"] as? String == "incident" }
                #expect(seen.compactMap { $0["status"] as? String } == ["firing", "resolved"], "incident frames on the stream: \(seen)")
            }
        }
    }

    @Test(
        "a burst of failing tool calls: error rate and p95 move, a spike fires after warm-up (none during it), resolves when the tool recovers",
        .tags(.alone)
    )
    func skillSpike() async throws {
        let harness = try await H()
        try await harness.run { ingest, _, health in
            let key = try await harness.live.createKey(ingest)
            let token = try await harness.token()
            try await H.setThresholds(health, token: token, ["resolveAfterSeconds": 0])
            func calls(ok: Bool, _ count: Int, latency: Double) -> [JSON] {
                (0..<count).map { _ in
                    var call: JSON = ["kind": "tool_call", "swarmId": "w1", "agentId": "a1", "tool": "run_tests", "ok": ok, "latencyMs": latency]
                    if !ok { call["error"] = "exit status 1" }
                    return call
                }
            }
            // Warm-up: failures, but no baseline yet, so no incident.
            for _ in 0..<2 {
                try await harness.post(ingest, key: key, calls(ok: false, 5, latency: 100))
                try await Task.sleep(for: .milliseconds(1100))
            }
            #expect(try await H.incidents(health, token: token).isEmpty, "an incident during warm-up")
            // A baseline of successes, then a burst of slow failures.
            for _ in 0..<7 {
                try await harness.post(ingest, key: key, calls(ok: true, 5, latency: 100))
                try await Task.sleep(for: .milliseconds(1100))
            }
            // Twice a second, so consecutive one-second samples hold failures however the posts
            // fall against them.
            for _ in 0..<6 {
                try await harness.post(ingest, key: key, calls(ok: false, 8, latency: 20_000))
                try await Task.sleep(for: .milliseconds(500))
            }
            let incident = try #require(try await H.incident(health, token: token, rule: "skill_failure_spike"), "no spike incident")
            let skillID = try #require(incident["skillId"] as? String)
            let (status, skill) = try await H.get(health, "/v1/skill-health/\(skillID)?window=1h", token: token)
            #expect(status == .ok)
            let summary = try #require(skill["skill"] as? JSON)
            #expect(summary["name"] as? String == "run_tests" && summary["swarmId"] as? String == "w1")
            #expect((summary["errorRate"] as? Double ?? 0) > 0.3, "\(summary)")
            #expect((summary["p95LatencyMs"] as? Double ?? 0) > 10_000, "\(summary)")
            #expect((skill["incidents"] as? [JSON])?.contains { $0["id"] as? String == incident["id"] as? String } == true)
            #expect((skill["series"] as? [JSON])?.count == 12)
            let (_, list) = try await H.get(health, "/v1/skill-health?swarmId=w1&window=24h", token: token)
            #expect((list["skills"] as? [JSON])?.first?["skillId"] as? String == skillID)
            // Recovery.
            for _ in 0..<3 {
                try await harness.post(ingest, key: key, calls(ok: true, 5, latency: 100))
                try await Task.sleep(for: .milliseconds(1100))
            }
            #expect(try await H.incident(health, token: token, rule: "skill_failure_spike", status: "resolved") != nil, "not resolved")
        }
    }
}

import Approvals
import Contracts
import ControlAPI
import Foundation
import HummingbirdTesting
import Ingest
import ServiceHarnesses
import ServiceKit
import Synchronization
import TestSupport
import Testing

@Suite("Health-monitor live: stuck agents under the real connector, loops, gates, thresholds and restarts")
struct HealthAgentTests {
    typealias H = HealthHarness
    typealias JSON = [String: Any]

    static var swarmdeck: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("swarmdeck")
    }

    @Test("a silent connector-run process is stuck; an agent waiting on an approval gate is not; an identical call repeated is a loop")
    func stuckAndLoops() async throws {
        let harness = try await H(["CONTROL_OFFLINE_SECONDS": "30"])
        try await harness.run { ingest, control, health in
            try await harness.live.application(ApprovalsService.self).test(.live) { approvals in
                let key = try await harness.live.createKey(ingest)
                let token = try await harness.token()
                try await H.setThresholds(health, token: token, ["stuckMinutes": 0.05, "resolveAfterSeconds": 0])

                // An agent waiting on a person: a pending gate (its event in the log first), then
                // running and silent.
                let (created, session) = try await LiveCall.call(
                    control,
                    .post,
                    "/v1/agent/sessions",
                    token: key,
                    json: ["swarmId": "e2e", "agentId": "waiter"]
                )
                #expect(created == .created, "\(session)")
                let agentToken = try #require(session["token"] as? String)
                let (opened, gate) = try await LiveCall.call(
                    approvals,
                    .post,
                    "/v1/agent/gates",
                    token: agentToken,
                    json: ["idempotencyKey": "k1", "summary": "deploy?", "tool": "Bash"]
                )
                #expect(opened == .created, "\(gate)")
                try await Task.sleep(for: .milliseconds(1500))
                try await harness.post(ingest, key: key, [["kind": "state", "swarmId": "e2e", "agentId": "waiter", "state": "running"]])

                // A silent process under the real connector.
                let connector = Process()
                connector.executableURL = Self.swarmdeck
                connector.arguments = [
                    "agent", "run", "--ingest-url", "http://127.0.0.1:\(try #require(ingest.port))", "--control-url",
                    "http://127.0.0.1:\(try #require(control.port))", "--swarm", "e2e", "--name", "silent", "--heartbeat-seconds", "1", "--key", key,
                    "--", "sleep", "1000",
                ]
                connector.standardOutput = FileHandle.nullDevice
                connector.standardError = FileHandle.nullDevice
                try connector.run()
                defer { if connector.isRunning { kill(connector.processIdentifier, SIGKILL) } }

                let stuck = try await H.incident(health, token: token, rule: "agent_stuck", timeout: .seconds(30))
                #expect(stuck?["agentId"] as? String == "silent", "\(String(describing: stuck))")
                // Well past the threshold, the waiting agent is still not stuck.
                try await Task.sleep(for: .seconds(2))
                let firing = try await H.incidents(health, token: token)
                #expect(!firing.contains { $0["agentId"] as? String == "waiter" }, "\(firing)")

                // The same call, same arguments, five times in a row: a loop; other arguments are exploration.
                func call(_ command: String) -> JSON {
                    [
                        "kind": "tool_call", "swarmId": "e2e", "agentId": "looper", "tool": "Bash", "ok": true,
                        "attrs": ["tool_input": ["command": command]],
                    ]
                }
                try await harness.post(ingest, key: key, ["ls a", "ls b", "ls c", "ls d", "ls e"].map(call))
                try await Task.sleep(for: .seconds(1))
                #expect(!(try await H.incidents(health, token: token)).contains { $0["rule"] as? String == "tool_loop" })
                try await harness.post(ingest, key: key, Array(repeating: call("make test"), count: 5))
                let loop = try await H.incident(health, token: token, rule: "tool_loop")
                #expect(loop?["agentId"] as? String == "looper")
                #expect((loop?["summary"] as? String)?.contains("5 times") == true, "\(String(describing: loop))")
                // Output from the silent one's agent id ends its stuck incident.
                try await harness.post(ingest, key: key, [["kind": "log", "swarmId": "e2e", "agentId": "silent", "message": "alive"]])
                #expect(try await H.incident(health, token: token, rule: "agent_stuck", status: "resolved") != nil)
            }
        }
    }

    @Test(
        "PUT thresholds changes behaviour at once; control-api's overview and agent carry it; a restart mid-incident leaves one incident, still firing, with its history"
    )
    func thresholdsAndRestart() async throws {
        let harness = try await H()
        let incidentID = try await Self.firingAfterThresholdChange(harness)
        // A new start of health-monitor on the same schema and log: it rebuilds its windows and
        // takes the incident back; the condition still holds, so it keeps firing.
        try await harness.health { health in
            let token = try await harness.token()
            try await Task.sleep(for: .seconds(2))
            let firing = try await H.incidents(health, token: token)
            #expect(firing.map { $0["id"] as? String } == [incidentID], "\(firing)")
            let all = try await H.incidents(health, token: token, status: "all")
            #expect(all.count == 1, "a second incident: \(all)")
            let (_, detail) = try await H.get(health, "/v1/incidents/\(incidentID)", token: token)
            #expect((detail["timeline"] as? [JSON])?.compactMap { $0["action"] as? String } == ["fired", "acknowledged"], "\(detail)")
            let (_, context) = try await H.get(health, "/v1/context-health/sess-t", token: token)
            #expect(context["tokenUsage"] as? Int == 140_000, "rebuilt from the log: \(context)")
        }
    }

    @Test(
        "the overview's activeIncidents is never silently absent: empty and stale before health-monitor answers, its list while it does, its last list marked stale once it stops"
    )
    func overviewWhenHealthIsGone() async throws {
        let harness = try await H()
        try await harness.live.application(IngestService.self).test(.live) { ingest in
            try await harness.live.application(ControlAPIService.self).test(.live) { control in
                let token = try await harness.token()
                let (status, before) = try await H.get(control, "/v1/overview", token: token)
                #expect(status == .ok)
                #expect((before["activeIncidents"] as? [JSON])?.isEmpty == true, "\(before)")
                #expect(before["healthStale"] as? Bool == true && before["healthAsOf"] == nil && before["health"] == nil, "\(before)")

                let key = try await harness.live.createKey(ingest)
                let incidentID = Mutex("")
                try await harness.health { health in
                    try await harness.post(
                        ingest,
                        key: key,
                        [
                            [
                                "kind": "usage", "swarmId": "w", "agentId": "a", "model": "m", "inputTokens": 140_000, "outputTokens": 10,
                                "attrs": ["session.id": "s"],
                            ]
                        ]
                    )
                    try await H.setThresholds(health, token: token, ["nearCapacityPercent": 60])
                    let incident = try #require(try await H.incident(health, token: token, rule: "context_near_capacity", timeout: .seconds(10)))
                    let id = try #require(incident["id"] as? String)
                    incidentID.withLock { $0 = id }
                    let fresh = await eventually(timeout: .seconds(10)) {
                        let (_, body) = (try? await H.get(control, "/v1/overview", token: token)) ?? (.ok, [:])
                        let first = (body["activeIncidents"] as? [JSON])?.first
                        return first?["id"] as? String == id && first?["status"] as? String == "firing" && body["healthStale"] as? Bool == false
                            && body["healthAsOf"] is String
                    }
                    #expect(fresh, "the overview never showed the incident fresh")
                }
                // health-monitor has stopped: the last list, marked stale, not an empty one.
                let (_, after) = try await H.get(control, "/v1/overview", token: token)
                #expect(after["healthStale"] as? Bool == true && after["healthAsOf"] is String, "\(after)")
                #expect((after["activeIncidents"] as? [JSON])?.map { $0["id"] as? String } == [incidentID.withLock { $0 }], "\(after)")
                #expect(((after["health"] as? JSON)?["activeIncidents"] as? [JSON])?.count == 1, "\(after)")
                // As seed 000 §8.1 declares an incident.
                let decoded = try JSONDecoder.apiDates().decode(
                    [Seed000.Incident].self,
                    from: try JSONSerialization.data(withJSONObject: after["activeIncidents"] ?? [])
                )
                #expect(decoded.first?.status == "firing" && decoded.first?.agentId == "a" && decoded.first?.swarmId == "w", "\(decoded)")
                // Another tenant's overview has nothing of it.
                let (_, other) = try await H.get(
                    control,
                    "/v1/overview",
                    token: try await harness.token(tenant: "another-\(UUID().uuidString.prefix(8))")
                )
                #expect((other["activeIncidents"] as? [JSON])?.isEmpty == true && other["healthAsOf"] == nil, "\(other)")
            }
        }
    }

    /// Context at 70%: nothing at the default 80%; lowering the tenant's threshold to 60% fires
    /// at once; the incident is acknowledged. Answers its id.
    static func firingAfterThresholdChange(_ harness: H) async throws -> String {
        let found = Mutex("")
        // The notices the notifier reads: the incident's session goes with it to the push.
        let nats = try await NATSConnection.connect(NATSConfiguration(servers: [try harness.live.environment()["NATS_URL"]!], name: "notices"))
        defer { Task { await nats.close() } }
        let notices = try await nats.subscribe(to: try Subjects(prefix: harness.live.prefix).incidentChanged(tenant: harness.live.tenant))
        try await nats.flush()
        try await harness.run { ingest, control, health in
            let key = try await harness.live.createKey(ingest)
            let token = try await harness.token()
            try await harness.post(
                ingest,
                key: key,
                [
                    [
                        "kind": "usage", "swarmId": "w", "agentId": "a", "model": "m", "inputTokens": 140_000, "outputTokens": 10,
                        "attrs": ["session.id": "sess-t"],
                    ]
                ]
            )
            try await Task.sleep(for: .seconds(1))
            #expect(try await H.incidents(health, token: token).isEmpty)
            try await H.setThresholds(health, token: token, ["nearCapacityPercent": 60])
            let incident = try #require(try await H.incident(health, token: token, rule: "context_near_capacity", timeout: .seconds(5)))
            let incidentID = try #require(incident["id"] as? String)
            found.withLock { $0 = incidentID }
            let (status, acknowledged) = try await LiveCall.call(
                health,
                .post,
                "/v1/incidents/\(incidentID)/acknowledge",
                token: token,
                json: ["reason": "looking into it"]
            )
            #expect(status == .ok && acknowledged["acknowledged"] as? Bool == true && acknowledged["status"] as? String == "firing")
            let notice: IncidentNotice? = try await withDeadline(.seconds(10), orThrow: ServiceKitError(.natsTimeout, "no incident notice")) {
                for await message in notices {
                    return try JSONDecoder().decode(IncidentNotice.self, from: Data(message.payload))
                }
                return nil
            }
            #expect(notice?.incidentId == incidentID && notice?.sessionId == "sess-t" && notice?.skillId == nil, "\(String(describing: notice))")
            // control-api's overview and agent detail carry it, learned over NATS.
            let overview = await eventually(timeout: .seconds(10)) {
                let (_, body) = (try? await H.get(control, "/v1/overview", token: token)) ?? (.ok, [:])
                let health = body["health"] as? JSON
                return (health?["activeIncidents"] as? [JSON])?.first?["id"] as? String == incidentID && health?["contextRisk"] as? Double == 70
                    && (body["activeIncidents"] as? [JSON])?.first?["id"] as? String == incidentID && body["healthStale"] as? Bool == false
            }
            #expect(overview, "the overview has no health")
            let agentHealth = await eventually(timeout: .seconds(10)) {
                let (_, agent) = (try? await H.get(control, "/v1/agents/a", token: token)) ?? (.ok, [:])
                let context = ((agent["health"] as? JSON)?["context"] as? [JSON])?.first
                return context?["sessionId"] as? String == "sess-t" && context?["warnings"] as? [String] == ["near_capacity"]
            }
            #expect(agentHealth, "the agent has no health")
            let (_, thresholds) = try await H.get(health, "/v1/alert-thresholds", token: token)
            let tenant = try #require(thresholds["tenant"] as? JSON)
            #expect(tenant["version"] as? Int == 1 && (tenant["effective"] as? JSON)?["nearCapacityPercent"] as? Double == 60)
        }
        return found.withLock { $0 }
    }
}

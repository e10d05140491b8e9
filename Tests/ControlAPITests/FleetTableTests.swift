import Foundation
import HummingbirdTesting
import ServiceHarnesses
import TestSupport
import Testing

@Suite("The fleet as ingest's appends keep it: control-api answers from the table, hearing no event (live)")
struct FleetTableTests {
    typealias H = ControlHarness
    typealias JSON = [String: Any]

    @Test(
        """
        the latest state, swarm and terminal by seq, the task summary kept until another and cut to its bound, events and \
        errors of the hour counted once (a repeated msgId is not), ACP messages counted, and a tenant's list bounded to its most recently seen agents
        """
    )
    func fleetFromTheTable() async throws {
        let harness = try await H(["CONTROL_MAX_AGENTS_PER_TENANT": "10"])
        try await harness.run(.live) { ingest, control in
            let key = try await harness.createKey(ingest)
            let token = try await harness.token(scopes: [.streamRead])
            let summary = String(repeating: "ü", count: 600)
            try await harness.post(
                ingest,
                key: key,
                [
                    [
                        "msgId": "s1", "swarmId": "w1", "agentId": "a", "kind": "state", "state": "running", "taskSummary": summary,
                        "attrs": ["worker": true, "tmuxSession": "sd-a", "host": "box"],
                    ],
                    ["msgId": "l1", "swarmId": "w1", "agentId": "a", "kind": "log", "severity": "error", "message": "boom"],
                ]
            )
            var (status, agent) = try await H.call(control, .get, "/v1/agents/a", token: token)
            #expect(status == .ok, "\(agent)")
            #expect(agent["swarmId"] as? String == "w1" && agent["state"] as? String == "running")
            #expect(agent["acceptsRequests"] as? Bool == true)
            #expect((agent["terminal"] as? JSON)?["tmuxSession"] as? String == "sd-a")
            #expect((agent["terminal"] as? JSON)?["host"] as? String == "box")
            let cut = try #require(agent["taskSummary"] as? String)
            #expect(cut.count == 500 && cut.hasSuffix("…"))
            #expect(agent["eventsLastHour"] as? Int == 2 && agent["errorsLastHour"] as? Int == 1, "\(agent)")
            let firstChange = agent["updatedAt"] as? String

            // The same message again (a retry): nothing counted twice. A log event in another
            // swarm moves the agent there; a state event without summary or terminal keeps the
            // summary and ends the terminal.
            let (again, answer) = try await harness.live.postEvents(
                ingest,
                key: key,
                [["msgId": "l1", "swarmId": "w1", "agentId": "a", "kind": "log", "severity": "error", "message": "boom"]]
            )
            #expect(again == .ok && String(buffer: answer).contains(#""duplicates":1"#), "\(again) \(String(buffer: answer))")
            try await harness.post(
                ingest,
                key: key,
                [
                    ["msgId": "l3", "swarmId": "w2", "agentId": "a", "kind": "log", "message": "moved"],
                    ["msgId": "s2", "swarmId": "w2", "agentId": "a", "kind": "state", "state": "running"],
                ]
            )
            (status, agent) = try await H.call(control, .get, "/v1/agents/a", token: token)
            #expect(agent["swarmId"] as? String == "w2")
            #expect(agent["taskSummary"] as? String == cut)
            #expect(agent["terminal"] == nil && agent["acceptsRequests"] as? Bool == false, "\(agent)")
            #expect(agent["eventsLastHour"] as? Int == 4 && agent["errorsLastHour"] as? Int == 1, "\(agent)")
            // The state did not change: nor did the time it changed.
            #expect(agent["updatedAt"] as? String == firstChange)
            // A second later (answers carry seconds), the state changes.
            try await Task.sleep(for: .milliseconds(1100))
            try await harness.post(ingest, key: key, [H.state(agent: "a", swarm: "w2", state: "waiting")])
            (status, agent) = try await H.call(control, .get, "/v1/agents/a", token: token)
            #expect(agent["state"] as? String == "waiting" && agent["updatedAt"] as? String != firstChange)
            let (swarmStatus, _) = try await H.call(control, .get, "/v1/swarms/w1", token: token)
            #expect(swarmStatus == .notFound, "swarm w1 has no agent any more")

            // An ACP message counts as its agent's event.
            let acp = try await harness.live.postACP(
                ingest,
                key: key,
                thread: "t1",
                body: #"{"jsonrpc":"2.0","method":"session/update","params":{"n":1}}"#,
                msgID: "acp1",
                swarm: "w2",
                agent: "a"
            )
            #expect(acp == .ok || acp == .accepted)
            (status, agent) = try await H.call(control, .get, "/v1/agents/a", token: token)
            #expect(agent["eventsLastHour"] as? Int == 6, "\(agent)")

            // A state and names with a NUL (escaped in the frame; Postgres text refuses the
            // character): the append goes through, the fleet keeps them without it.
            try await harness.post(
                ingest,
                key: key,
                [
                    [
                        "msgId": "nul", "swarmId": "w2", "agentId": "n", "kind": "state", "state": "run\u{0}ning",
                        "attrs": ["tmuxSession": "sd\u{0}-n", "host": "h\u{0}"],
                    ]
                ]
            )
            let (nulStatus, nul) = try await H.call(control, .get, "/v1/agents/n", token: token)
            #expect(nulStatus == .ok && nul["state"] as? String == "running", "\(nul)")
            let terminal = nul["terminal"] as? JSON
            #expect(terminal?["tmuxSession"] as? String == "sd-n" && terminal?["host"] as? String == "h", "\(nul)")

            // Twelve more agents: the tenant's list holds its ten most recently seen.
            for index in 0..<12 {
                try await harness.post(ingest, key: key, [H.state(agent: "b\(index)", swarm: "w3", state: "running")])
            }
            let (overviewStatus, overview) = try await H.call(control, .get, "/v1/overview", token: token)
            #expect(overviewStatus == .ok)
            #expect((overview["summaryCards"] as? JSON)?["agents"] as? Int == 10, "\(overview["summaryCards"] ?? "")")
            let (_, swarm) = try await H.call(control, .get, "/v1/swarms/w3", token: token)
            let members = (swarm["agents"] as? [JSON] ?? []).compactMap { $0["id"] as? String }
            #expect(Set(members) == Set((2..<12).map { "b\($0)" }), "\(members)")
            // Another tenant sees none of them.
            let other = try await harness.token(tenant: "other-" + harness.tenant, scopes: [.streamRead])
            #expect(try await H.call(control, .get, "/v1/agents/a", token: other).0 == .notFound)
        }
    }
}

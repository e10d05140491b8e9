import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@Suite("Control-api fleet reads, tenant isolation and bad input (live NATS and Postgres)")
struct ControlRequestTests {
    typealias H = ControlHarness

    @Test("the fleet: swarms, agents, states, error rates and deep links from the event log and the live feed")
    func fleet() async throws {
        let harness = try await ControlHarness()
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            try await harness.post(
                ingest,
                key: key,
                [
                    H.state(agent: "a1", swarm: "s1", state: "running"),
                    H.state(agent: "a2", swarm: "s1", state: "paused"),
                    H.state(agent: "b1", swarm: "s2", state: "terminated"),
                    ["msgId": "l1", "swarmId": "s1", "agentId": "a1", "kind": "log", "level": "error", "message": "boom"],
                    ["msgId": "l2", "swarmId": "s1", "agentId": "a1", "kind": "log", "level": "info", "message": "ok"],
                    ["msgId": "l3", "swarmId": "s1", "agentId": "a1", "kind": "log", "level": "info", "message": "ok"],
                    ["msgId": "t1", "swarmId": "s1", "agentId": "a1", "kind": "state", "state": "running", "taskSummary": "fix the tests"],
                ]
            )
            let token = try await harness.token(scopes: [.streamRead])
            var agent: [String: Any] = [:]
            let current = try await eventually {
                agent = try await H.call(control, .get, "/v1/agents/a1", token: token).1
                return agent["eventsLastHour"] as? Int == 5
            }
            #expect(current)
            #expect(
                agent["status"] as? String == "running" && agent["swarmId"] as? String == "s1" && agent["taskSummary"] as? String == "fix the tests"
            )
            #expect(agent["errorsLastHour"] as? Int == 1 && (agent["errorRate"] as? Double).map { abs($0 - 0.2) < 1e-9 } == true)
            #expect(agent["webUrl"] as? String == "http://127.0.0.1:8080/agents/a1")

            let (_, swarm) = try await H.call(control, .get, "/v1/swarms/s1", token: token)
            let summary = try #require(swarm["swarm"] as? [String: Any])
            #expect(summary["status"] as? String == "active" && summary["activeAgents"] as? Int == 2 && summary["totalAgents"] as? Int == 2)
            #expect((swarm["agents"] as? [[String: Any]])?.map { $0["status"] as? String } == ["running", "paused"])

            let (_, active) = try await H.call(control, .get, "/v1/swarms?status=active", token: token)
            #expect((active["swarms"] as? [[String: Any]])?.map { $0["id"] as? String } == ["s1"])
            let (_, all) = try await H.call(control, .get, "/v1/swarms", token: token)
            #expect(Set((all["swarms"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? []) == ["s1", "s2"])

            let (_, overview) = try await H.call(control, .get, "/v1/overview", token: token)
            let cards = try #require(overview["summaryCards"] as? [String: Any])
            #expect(cards["activeSwarms"] as? Int == 1 && cards["agents"] as? Int == 3)
            #expect(cards["agentsByState"] as? [String: Int] == ["running": 1, "paused": 1, "terminated": 1])
            // Seed 000's four: a terminated agent reads paused.
            #expect(cards["agentsByStatus"] as? [String: Int] == ["running": 1, "paused": 2])

            // A second replica, started now, builds the same view from the event log.
            try await harness.control().test(.router) { replica in
                let seen = try await eventually {
                    let (status, again) = try await H.call(replica, .get, "/v1/agents/a1", token: token)
                    return status == .ok && again["eventsLastHour"] as? Int == 5 && again["taskSummary"] as? String == "fix the tests"
                }
                #expect(seen)
            }
        }
    }

    @Test("tenant isolation: every read and control of another tenant's swarm, agent, control or audit answers 404 or nothing")
    func isolation() async throws {
        let harness = try await ControlHarness()
        let other = "other-" + harness.tenant
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            try await harness.announce(ingest, control, key: key, agent: "a1", swarm: "s1")
            let mine = try await harness.token()
            #expect(
                try await H.call(
                    control,
                    .post,
                    "/v1/agents/a1/control",
                    token: mine,
                    json: ["action": "pause", "reason": "r", "requestId": "iso-1"]
                ).0 == .accepted
            )

            let theirs = try await harness.token(tenant: other)
            for path in ["/v1/swarms/s1", "/v1/agents/a1", "/v1/controls/iso-1"] {
                let (status, body) = try await H.call(control, .get, path, token: theirs)
                #expect(status == .notFound && body.errorCode == "NotFound", "GET \(path)")
            }
            for path in ["/v1/swarms/s1/control", "/v1/agents/a1/control"] {
                for action in ["pause", "resume", "terminate"] {
                    let (status, _) = try await H.call(
                        control,
                        .post,
                        path,
                        token: theirs,
                        json: ["action": action, "reason": "r", "requestId": "x-\(action)", "confirm": "TERMINATE"]
                    )
                    #expect(status == .notFound, "POST \(path) \(action)")
                }
            }
            let (_, swarms) = try await H.call(control, .get, "/v1/swarms", token: theirs)
            #expect((swarms["swarms"] as? [Any])?.isEmpty == true)
            let (_, overview) = try await H.call(control, .get, "/v1/overview", token: theirs)
            #expect((overview["summaryCards"] as? [String: Any])?["agents"] as? Int == 0)
            let (_, audit) = try await H.call(control, .get, "/v1/audit", token: theirs)
            #expect((audit["entries"] as? [Any])?.isEmpty == true)

            // Request ids are per tenant: the other tenant's own "iso-1" is its own request.
            let otherKey = try await harness.createKey(ingest, tenant: other)
            try await harness.post(ingest, key: otherKey, [H.state(agent: "a1", swarm: "s1", state: "running")])
            let reached = try await eventually { try await H.call(control, .get, "/v1/agents/a1", token: theirs).0 == .ok }
            #expect(reached)
            let (status, receipt) = try await H.call(
                control,
                .post,
                "/v1/agents/a1/control",
                token: theirs,
                json: ["action": "resume", "reason": "r", "requestId": "iso-1"]
            )
            #expect(status == .accepted && receipt["action"] as? String == "resume")
            let (_, stillMine) = try await H.call(control, .get, "/v1/controls/iso-1", token: mine)
            #expect((stillMine["receipt"] as? [String: Any])?["action"] as? String == "pause")
        }
    }

    @Test("bad input on every endpoint answers 4xx in the error envelope")
    func badInput() async throws {
        let harness = try await ControlHarness()
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            try await harness.announce(ingest, control, key: key, agent: "a1", swarm: "s1")
            let token = try await harness.token()
            let long = String(repeating: "x", count: 257)
            struct Case {
                var method: HTTPRequest.Method
                var uri: String
                var body: String?
                var contentType = "application/json"
                var ingestKey = false
                var session = false
            }
            let control1 = "/v1/agents/a1/control"
            var cases: [Case] = [
                // Controls: wrong types, unknown actions, a wrong confirmation, oversized reasons,
                // malformed ids, broken JSON.
                Case(method: .post, uri: control1, body: #"{"action":1,"reason":"r","requestId":"b1"}"#),
                Case(method: .post, uri: control1, body: #"{"action":"pause","reason":[],"requestId":"b1"}"#),
                Case(method: .post, uri: control1, body: #"{"action":"pause","reason":"r","requestId":5}"#),
                Case(method: .post, uri: control1, body: #"{"action":"explode","reason":"r","requestId":"b1"}"#),
                Case(method: .post, uri: control1, body: #"{"action":"terminate","reason":"r","requestId":"b1","confirm":"yes"}"#),
                Case(method: .post, uri: control1, body: #"{"action":"pause","reason":"\#(String(repeating: "r", count: 501))","requestId":"b1"}"#),
                Case(method: .post, uri: control1, body: #"{"action":"pause","reason":"   ","requestId":"b1"}"#),
                Case(method: .post, uri: control1, body: #"{"action":"pause","reason":"a\u0000b","requestId":"b1"}"#),
                Case(method: .post, uri: control1, body: #"{"action":"pause","reason":"r","requestId":"has space"}"#),
                Case(method: .post, uri: control1, body: #"{"action":"pause","reason":"r","requestId":"\#(String(repeating: "q", count: 129))"}"#),
                Case(method: .post, uri: control1, body: #"{"action":"pause","reason":"r"}"#),
                Case(method: .post, uri: control1, body: #"{"action":"pause""#),
                Case(method: .post, uri: control1, body: "[]"),
                Case(method: .post, uri: control1, body: "null"),
                Case(method: .post, uri: control1, body: nil),
                Case(method: .post, uri: control1, body: "action=pause", contentType: "text/plain"),
                Case(method: .post, uri: "/v1/agents/\(long)/control", body: #"{"action":"pause","reason":"r","requestId":"b1"}"#),
                Case(method: .post, uri: "/v1/agents/a%01b/control", body: #"{"action":"pause","reason":"r","requestId":"b1"}"#),
                Case(method: .post, uri: "/v1/swarms/\(long)/control", body: #"{"action":"pause","reason":"r","requestId":"b1"}"#),
                Case(
                    method: .post,
                    uri: "/v1/swarms/s1/control",
                    body: #"{"action":"terminate","reason":"r","requestId":"b1","confirm":"terminate"}"#
                ),
                Case(
                    method: .post,
                    uri: control1,
                    body: #"{"action":"pause","reason":"\#(String(repeating: "r", count: 70_000))","requestId":"b1"}"#
                ),
                // Reads.
                Case(method: .get, uri: "/v1/agents/\(long)"),
                Case(method: .get, uri: "/v1/swarms/\(long)"),
                Case(method: .get, uri: "/v1/swarms?status=weird"),
                Case(method: .get, uri: "/v1/controls/bad%20id"),
                Case(method: .get, uri: "/v1/audit?limit=0"),
                Case(method: .get, uri: "/v1/audit?limit=501"),
                Case(method: .get, uri: "/v1/audit?limit=abc"),
                Case(method: .get, uri: "/v1/audit?before=0"),
                // Auth.
                Case(method: .post, uri: "/v1/admin/enrolment-codes", body: #"{"count":0}"#),
                Case(method: .post, uri: "/v1/admin/enrolment-codes", body: #"{"count":101}"#),
                Case(method: .post, uri: "/v1/admin/enrolment-codes", body: #"{"scopes":[]}"#),
                Case(method: .post, uri: "/v1/admin/enrolment-codes", body: #"{"scopes":["root"]}"#),
                Case(method: .post, uri: "/v1/admin/enrolment-codes", body: #"{"ttlSeconds":10}"#),
                Case(method: .post, uri: "/v1/auth/device/register", body: #"{"deviceName":"p"}"#),
                Case(method: .post, uri: "/v1/auth/device/register", body: #"{"code":7,"deviceName":"p"}"#),
                Case(method: .post, uri: "/v1/auth/device/register", body: #"{"code":"c","deviceName":"\#(String(repeating: "d", count: 201))"}"#),
                Case(method: .post, uri: "/v1/auth/token/refresh", body: #"{"refreshToken":""}"#),
                Case(method: .post, uri: "/v1/auth/token/refresh", body: #"{"refreshToken":true}"#),
            ]
            // The agent channel, with the ingest key.
            cases += [
                Case(method: .get, uri: "/v1/agent/commands?waitSeconds=31", session: true),
                Case(method: .get, uri: "/v1/agent/commands?waitSeconds=x", session: true),
                Case(method: .get, uri: "/v1/agent/commands?waitSeconds=0", ingestKey: true),
                Case(method: .post, uri: "/v1/agent/sessions", body: #"{"swarmId":"s1"}"#, ingestKey: true),
                Case(method: .post, uri: "/v1/agent/sessions", body: #"{"swarmId":"s1","agentId":"\#(long)"}"#, ingestKey: true),
                Case(method: .post, uri: "/v1/agent/sessions", body: #"{"swarmId":"s\u0001","agentId":"a1"}"#, ingestKey: true),
                Case(method: .post, uri: "/v1/agent/sessions", body: #"{"swarmId":"s1","agentId":"a1"}"#, session: true),
                Case(method: .delete, uri: "/v1/agent/sessions/current?exitStatus=256", session: true),
                Case(method: .delete, uri: "/v1/agent/sessions/current", ingestKey: true),
                Case(
                    method: .post,
                    uri: "/v1/agent/commands/ack",
                    body: #"{"commandId":"c","ackToken":"t","outcome":"exploded","state":"x"}"#,
                    session: true
                ),
                Case(method: .post, uri: "/v1/agent/commands/ack", body: #"{"commandId":"c","outcome":"applied","state":"x"}"#, session: true),
                Case(
                    method: .post,
                    uri: "/v1/agent/commands/ack",
                    body: #"{"commandId":"nope","ackToken":"t","outcome":"applied","state":"x"}"#,
                    session: true
                ),
                Case(
                    method: .post,
                    uri: "/v1/agent/commands/ack",
                    body: #"{"commandId":"\u0000x","ackToken":"t","outcome":"applied","state":"x"}"#,
                    session: true
                ),
                Case(
                    method: .post,
                    uri: "/v1/agent/commands/ack",
                    body: #"{"commandId":"c","ackToken":"t","outcome":"applied","state":"x"}"#,
                    ingestKey: true
                ),
                Case(method: .get, uri: "/v1/agent/commands?waitSeconds=0"),
            ]
            let session = try await H.openSession(control, key: key, swarm: "s1", agent: "a1")
            for item in cases {
                var headers: HTTPFields = [.authorization: "Bearer \(item.session ? session : item.ingestKey ? key : token)"]
                if item.body != nil { headers[.contentType] = item.contentType }
                let (status, object) = try await H.call(control, item.method, item.uri, body: item.body, headers: headers)
                let label = "\(item.method) \(item.uri.prefix(80)) \(item.body?.prefix(80) ?? "")"
                #expect((400..<500).contains(status.code), "\(label): \(status)")
                #expect(object.errorCode != nil, "\(label): no error envelope")
            }
            #expect(try await ControlTests.count(harness, "audit", where: "true") == 0)
        }
    }
}

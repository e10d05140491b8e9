import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import StreamTestSupport
import TestSupport
import Testing

@Suite("Approval gates: tenant isolation, bad input, and their life on /v1/stream (live)")
struct GateIsolationTests {
    typealias H = ApprovalsHarness

    @Test("another tenant's gates answer as if they did not exist: listed never, read and decided 404")
    func tenants() async throws {
        let harness = try await ApprovalsHarness()
        try await harness.run { ingest, control, approvals in
            let session = try await harness.session(ingest, control, agent: "a1")
            let gate = try await H.open(approvals, session: session)
            let stranger = try await harness.token(tenant: "other-" + harness.tenant)
            let (_, page) = try await LiveCall.call(approvals, .get, "/v1/approval-gates?status=all", token: stranger)
            #expect((page["gates"] as? [Any])?.isEmpty == true)
            #expect(try await LiveCall.call(approvals, .get, "/v1/approval-gates/\(gate)", token: stranger).0 == .notFound)
            let (decided, _) = try await LiveCall.call(
                approvals,
                .post,
                "/v1/approval-gates/\(gate)/decision",
                token: stranger,
                json: ["decision": "approve"]
            )
            #expect(decided == .notFound)
            // The other tenant's agent opening a gate with the same key gets its own.
            let theirs = try await harness.session(ingest, control, agent: "a1", tenant: "other-" + harness.tenant)
            let (status, other) = try await LiveCall.call(
                approvals,
                .post,
                "/v1/agent/gates",
                token: theirs,
                json: ["idempotencyKey": "same", "summary": "theirs"]
            )
            #expect(status == .created)
            #expect(other["gateId"] as? String != gate)
            // The owner still sees its gate pending, and only it.
            let owner = try await harness.token()
            let (_, mine) = try await LiveCall.call(approvals, .get, "/v1/approval-gates", token: owner)
            #expect((mine["gates"] as? [[String: Any]])?.map { $0["gateId"] as? String } == [gate])
        }
    }

    @Test("credentials: an agent cannot decide, a phone cannot open, a token without the scope cannot decide")
    func credentials() async throws {
        let harness = try await ApprovalsHarness()
        try await harness.run { ingest, control, approvals in
            let session = try await harness.session(ingest, control, agent: "a1")
            let gate = try await H.open(approvals, session: session)
            let uri = "/v1/approval-gates/\(gate)/decision"
            #expect(try await LiveCall.call(approvals, .post, uri, token: session, json: ["decision": "approve"]).0 == .unauthorized)
            let phone = try await harness.token()
            #expect(
                try await LiveCall.call(approvals, .post, "/v1/agent/gates", token: phone, json: ["idempotencyKey": "k", "summary": "x"]).0
                    == .unauthorized
            )
            let reader = try await harness.token(scopes: [.streamRead])
            #expect(try await LiveCall.call(approvals, .post, uri, token: reader, json: ["decision": "approve"]).0 == .forbidden)
            #expect(try await LiveCall.call(approvals, .get, "/v1/approval-gates/\(gate)", token: reader).0 == .ok)
            #expect(try await LiveCall.call(approvals, .get, "/v1/approval-gates").0 == .unauthorized)
        }
    }

    @Test("bad input answers 400 in the error envelope")
    func badInput() async throws {
        let harness = try await ApprovalsHarness()
        try await harness.run { ingest, control, approvals in
            let session = try await harness.session(ingest, control, agent: "a1")
            let gate = try await H.open(approvals, session: session)
            let phone = try await harness.token()
            let opens: [[String: Any]] = [
                ["idempotencyKey": "has space", "summary": "x"],
                ["idempotencyKey": "k1", "summary": "   "],
                ["idempotencyKey": "k2", "summary": String(repeating: "s", count: 501)],
                ["idempotencyKey": "k3", "summary": "x", "expiresInSeconds": 0],
                ["idempotencyKey": "k4", "summary": "x", "expiresInSeconds": 86_401],
                ["idempotencyKey": "k5", "summary": "x", "risk": "extreme"],
                ["idempotencyKey": "k6", "summary": "nul\u{0}"],
                [
                    "idempotencyKey": "k7", "summary": "x",
                    "options": [["optionId": "a", "name": "A", "kind": "allow_once"], ["optionId": "a", "name": "B", "kind": "reject_once"]],
                ],
                ["idempotencyKey": "k8", "summary": "x", "toolInput": "not an object"],
            ]
            for body in opens {
                let (status, answer) = try await LiveCall.call(approvals, .post, "/v1/agent/gates", token: session, json: body)
                #expect(status == .badRequest, "\(body) answered \(status)")
                #expect(answer.errorCode == "InvalidRequest", "\(body): \(answer)")
            }
            let decisions: [[String: Any]] = [
                ["decision": "maybe"],
                ["decision": "approve", "decisionId": "has space"],
                ["decision": "approve", "reason": String(repeating: "r", count: 1001)],
                [:],
            ]
            for body in decisions {
                let (status, answer) = try await LiveCall.call(approvals, .post, "/v1/approval-gates/\(gate)/decision", token: phone, json: body)
                #expect(status == .badRequest, "\(body) answered \(status)")
                #expect(answer.errorCode == "InvalidRequest")
            }
            for query in ["status=nope", "limit=0", "limit=201", "cursor=garbage"] {
                let (status, answer) = try await LiveCall.call(approvals, .get, "/v1/approval-gates?\(query)", token: phone)
                #expect(status == .badRequest, "\(query) answered \(status)")
                #expect(answer.errorCode == "InvalidRequest")
            }
            #expect(try await LiveCall.call(approvals, .get, "/v1/approval-gates/g_nope", token: phone).0 == .notFound)
        }
    }

    @Test("pages: newest first, every gate once across pages, filtered by status")
    func paging() async throws {
        let harness = try await ApprovalsHarness()
        try await harness.run { ingest, control, approvals in
            let session = try await harness.session(ingest, control, swarm: "s1", agent: "a1")
            var opened: [String] = []
            for _ in 0..<7 { opened.append(try await H.open(approvals, session: session)) }
            let phone = try await harness.token()
            #expect(
                try await LiveCall.call(approvals, .post, "/v1/approval-gates/\(opened[0])/decision", token: phone, json: ["decision": "approve"]).0
                    == .ok
            )
            var seen: [String] = []
            var cursor: String?
            repeat {
                let query = "status=all&limit=3" + (cursor.map { "&cursor=\($0)" } ?? "")
                let (_, page) = try await LiveCall.call(approvals, .get, "/v1/approval-gates?\(query)", token: phone)
                seen += (page["gates"] as? [[String: Any]] ?? []).compactMap { $0["gateId"] as? String }
                cursor = page["nextCursor"] as? String
            } while cursor != nil
            #expect(Set(seen) == Set(opened))
            #expect(seen.count == opened.count)
            let (_, pending) = try await LiveCall.call(approvals, .get, "/v1/approval-gates?status=pending&swarmId=s1", token: phone)
            #expect((pending["gates"] as? [Any])?.count == 6)
            let (_, decided) = try await LiveCall.call(approvals, .get, "/v1/approval-gates?status=decided", token: phone)
            #expect((decided["gates"] as? [[String: Any]])?.map { $0["gateId"] as? String } == [opened[0]])
        }
    }

    @Test("a gate's whole life is on /v1/stream as approvalGate frames (filter approvals), and a client resuming from seq 0 gets it again")
    func stream() async throws {
        let harness = try await ApprovalsHarness()
        try await harness.runWithStream { ingest, control, approvals, fanout in
            let session = try await harness.session(ingest, control, agent: "a1")
            let phone = try await harness.token()
            let gate = try await H.open(approvals, session: session)
            let stream = StreamClient(port: try #require(fanout.port), token: phone)
            async let live = stream.run(sending: [subscribe(filters: ["include": ["approvals"]])], timeout: .seconds(30)) { frame in
                frame["gateId"] as? String == gate && frame["status"] as? String == "rejected"
            }
            try await Task.sleep(for: .milliseconds(500))
            #expect(
                try await LiveCall.call(
                    approvals,
                    .post,
                    "/v1/approval-gates/\(gate)/decision",
                    token: phone,
                    json: ["decision": "reject", "reason": "wrong branch entirely"]
                ).0 == .ok
            )
            let frames = try await live.frames.filter { $0["type"] as? String == "approvalGate" }
            #expect(frames.last?["reason"] as? String == "wrong branch entirely")
            // Resumed from the start: the whole life, opened then rejected, in order.
            let replay = try await stream.run(sending: [subscribe(lastEventId: 0, filters: ["include": ["approvals"]])], timeout: .seconds(30)) {
                frame in
                frame["gateId"] as? String == gate && frame["status"] as? String == "rejected"
            }
            let life = replay.frames.filter { $0["gateId"] as? String == gate }.map { $0["status"] as? String }
            #expect(life == ["pending", "rejected"])
            #expect(replay.frames.filter { $0["gateId"] != nil }.allSatisfy { ($0["webUrl"] as? String)?.hasSuffix("/gates/\(gate)") == true })
        }
    }
}

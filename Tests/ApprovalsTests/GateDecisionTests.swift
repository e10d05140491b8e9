import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@Suite("Approval gates: opened by an agent, decided once by a person, answered on the agent's channel (live)")
struct GateDecisionTests {
    typealias H = ApprovalsHarness

    @Test("50 concurrent conflicting decisions: one wins, 49 get 409 with its receipt, one decision in the audit trail, the agent gets it")
    func oneDecisionWins() async throws {
        let harness = try await ApprovalsHarness()
        try await harness.run { ingest, control, approvals in
            let session = try await harness.session(ingest, control, agent: "a1")
            let gate = try await H.open(approvals, session: session)
            /// One answer, in Sendable parts: status, the receipt (own or the winner's), the error code.
            typealias Answer = (status: HTTPResponse.Status, receiptID: String?, receiptStatus: String?, decidedBy: String?, code: String?)
            let answers = try await withThrowingTaskGroup(of: Answer.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let token = try await harness.token(subject: "person-\(index)")
                        let body: [String: Any] =
                            index % 2 == 0
                            ? ["decision": "approve", "decisionId": "d-\(index)"]
                            : ["decision": "reject", "reason": "not now, person \(index)", "decisionId": "d-\(index)"]
                        let (status, answer) = try await LiveCall.call(
                            approvals,
                            .post,
                            "/v1/approval-gates/\(gate)/decision",
                            token: token,
                            json: body
                        )
                        let receipt = status == .ok ? answer : answer["receipt"] as? [String: Any] ?? [:]
                        return (
                            status, receipt["receiptId"] as? String, receipt["status"] as? String, receipt["decidedBy"] as? String, answer.errorCode
                        )
                    }
                }
                var all: [Answer] = []
                for try await answer in group { all.append(answer) }
                return all
            }
            let winners = answers.filter { $0.status == .ok }
            #expect(winners.count == 1)
            let receipt = try #require(winners.first)
            let losers = answers.filter { $0.status == .conflict }
            #expect(losers.count == 49)
            for loser in losers {
                #expect(loser.code == "Conflict")
                #expect(loser.receiptID == receipt.receiptID)
            }
            let token = try await harness.token()
            let (_, detail) = try await LiveCall.call(approvals, .get, "/v1/approval-gates/\(gate)", token: token)
            let audit = try #require(detail["audit"] as? [[String: Any]])
            #expect(audit.map { $0["action"] as? String } == ["opened", receipt.receiptStatus])
            #expect(audit.last?["actor"] as? String == receipt.decidedBy)

            let outcome = try #require(try await H.gateOutcome(control, session: session), "the agent never heard the decision")
            #expect(outcome["gateId"] as? String == gate)
            #expect(outcome["status"] as? String == receipt.receiptStatus)
            #expect(outcome["allow"] as? Bool == (receipt.receiptStatus == "approved"))
        }
    }

    @Test("the same decision sent again gets the same receipt byte for byte; another decision id gets 409; a reject needs its reason")
    func receipts() async throws {
        let harness = try await ApprovalsHarness()
        try await harness.run { ingest, control, approvals in
            let session = try await harness.session(ingest, control, agent: "a1")
            let gate = try await H.open(approvals, session: session)
            let token = try await harness.token(subject: "alice")
            let (short, refusal) = try await LiveCall.call(
                approvals,
                .post,
                "/v1/approval-gates/\(gate)/decision",
                token: token,
                json: ["decision": "reject", "reason": "  no  "]
            )
            #expect(short == .badRequest)
            #expect(refusal.errorCode == "InvalidRequest")
            let body = #"{"decision":"reject","reason":"touches production data","decisionId":"phone-1"}"#
            let (first, firstBytes) = try await LiveCall.raw(approvals, .post, "/v1/approval-gates/\(gate)/decision", token: token, body: body)
            #expect(first == .ok)
            let (again, againBytes) = try await LiveCall.raw(approvals, .post, "/v1/approval-gates/\(gate)/decision", token: token, body: body)
            #expect(again == .ok)
            #expect(againBytes == firstBytes)
            let (other, conflict) = try await LiveCall.call(
                approvals,
                .post,
                "/v1/approval-gates/\(gate)/decision",
                token: token,
                json: ["decision": "approve", "decisionId": "phone-2"]
            )
            #expect(other == .conflict)
            let receipt = try #require(conflict["receipt"] as? [String: Any])
            #expect(receipt["status"] as? String == "rejected")
            #expect(receipt["reason"] as? String == "touches production data")
            #expect(receipt["decidedBy"] as? String == "alice")
            // The same decision id with another verdict is not a repeat.
            let (changed, _) = try await LiveCall.call(
                approvals,
                .post,
                "/v1/approval-gates/\(gate)/decision",
                token: token,
                json: ["decision": "approve", "decisionId": "phone-1"]
            )
            #expect(changed == .conflict)
        }
    }

    @Test("options (ACP): an unoffered option is refused and never approves; an allow option approves with its id; a reject option cannot approve")
    func options() async throws {
        let harness = try await ApprovalsHarness()
        try await harness.run { ingest, control, approvals in
            let session = try await harness.session(ingest, control, agent: "a1")
            let options: [[String: Any]] = [
                ["optionId": "allow-once", "name": "Allow once", "kind": "allow_once"],
                ["optionId": "reject-once", "name": "Reject", "kind": "reject_once"],
            ]
            let gate = try await H.open(approvals, session: session, ["options": options])
            let token = try await harness.token()
            let uri = "/v1/approval-gates/\(gate)/decision"
            for body: [String: Any] in [
                ["decision": "approve", "optionId": "allow-always"],
                ["decision": "approve", "optionId": "reject-once"],
                ["decision": "approve"],
            ] {
                let (status, answer) = try await LiveCall.call(approvals, .post, uri, token: token, json: body)
                #expect(status == .badRequest, "\(body) answered \(status) \(answer)")
            }
            let (_, pending) = try await LiveCall.call(approvals, .get, "/v1/approval-gates/\(gate)", token: token)
            #expect((pending["gate"] as? [String: Any])?["status"] as? String == "pending")
            let (status, receipt) = try await LiveCall.call(
                approvals,
                .post,
                uri,
                token: token,
                json: ["decision": "approve", "optionId": "allow-once"]
            )
            #expect(status == .ok)
            #expect(receipt["optionId"] as? String == "allow-once")
            let outcome = try #require(try await H.gateOutcome(control, session: session))
            #expect(outcome["optionId"] as? String == "allow-once")
            #expect(outcome["allow"] as? Bool == true)
        }
    }

    @Test("an agent opening again with its key gets the same gate; per-agent and per-tenant caps answer 429")
    func idempotentAndCapped() async throws {
        let harness = try await ApprovalsHarness(["APPROVALS_MAX_PENDING_PER_AGENT": "3", "APPROVALS_MAX_PENDING_PER_TENANT": "5"])
        try await harness.run { ingest, control, approvals in
            let session = try await harness.session(ingest, control, agent: "a1")
            let first = try await H.open(approvals, session: session, key: "toolu_1")
            let (status, again) = try await LiveCall.call(
                approvals,
                .post,
                "/v1/agent/gates",
                token: session,
                json: ["idempotencyKey": "toolu_1", "summary": "something else"]
            )
            #expect(status == .ok)
            #expect(again["gateId"] as? String == first)
            _ = try await H.open(approvals, session: session)
            _ = try await H.open(approvals, session: session)
            let (capped, refusal) = try await LiveCall.call(
                approvals,
                .post,
                "/v1/agent/gates",
                token: session,
                json: ["idempotencyKey": "x4", "summary": "4th"]
            )
            #expect(capped == .tooManyRequests)
            #expect(refusal.errorCode == "RateLimited")
            let second = try await harness.session(ingest, control, agent: "a2")
            _ = try await H.open(approvals, session: second)
            _ = try await H.open(approvals, session: second)
            let (tenantCapped, _) = try await LiveCall.call(
                approvals,
                .post,
                "/v1/agent/gates",
                token: second,
                json: ["idempotencyKey": "y3", "summary": "6th"]
            )
            #expect(tenantCapped == .tooManyRequests)
            // Deciding one makes room.
            let token = try await harness.token()
            #expect(
                try await LiveCall.call(approvals, .post, "/v1/approval-gates/\(first)/decision", token: token, json: ["decision": "approve"]).0
                    == .ok
            )
            #expect(
                try await LiveCall.call(approvals, .post, "/v1/agent/gates", token: second, json: ["idempotencyKey": "y3", "summary": "6th"]).0
                    == .created
            )
        }
    }

    @Test("rates: a tenant's openings and a person's decisions past their per-minute budgets answer 429 with Retry-After")
    func rates() async throws {
        let harness = try await ApprovalsHarness(["APPROVALS_OPENS_PER_MINUTE": "3", "APPROVALS_DECISIONS_PER_MINUTE": "2"])
        try await harness.run { ingest, control, approvals in
            let session = try await harness.session(ingest, control, agent: "a1")
            // Each budget full at first, then a token back every 20 s (openings) or 30 s
            // (decisions): what is admitted is counted against the time the calls took.
            let opens = BucketProbe(perMinute: 3)
            var gates: [String] = []
            var refusal: [String: Any] = [:]
            let (opened, openRefused) = try await opens.untilRefused { index in
                let (status, body) = try await LiveCall.call(
                    approvals,
                    .post,
                    "/v1/agent/gates",
                    token: session,
                    json: ["idempotencyKey": "k\(index)", "summary": "gate \(index)"]
                )
                if status == .created, let gate = body["gateId"] as? String { gates.append(gate) } else { refusal = body }
                return status == .created
            }
            #expect(openRefused && opens.fits(opened), "\(opened) gates opened in \(opens.seconds) s at 3 a minute")
            #expect(refusal.errorCode == "RateLimited")
            #expect((refusal["error"] as? [String: Any])?["retryAfterSeconds"] as? Int ?? 0 >= 1)
            // A gate for each decision: one more opened (when the openings' budget has a token
            // again) when the decisions admitted outrun the gates.
            func gate(_ index: Int) async throws -> String {
                while gates.count <= index {
                    let (status, body) = try await LiveCall.call(
                        approvals,
                        .post,
                        "/v1/agent/gates",
                        token: session,
                        json: ["idempotencyKey": "more-\(gates.count)", "summary": "more"]
                    )
                    if status == .created, let gate = body["gateId"] as? String { gates.append(gate) } else { try await Task.sleep(for: .seconds(1)) }
                }
                return gates[index]
            }
            let token = try await harness.token(subject: "hasty")
            let decisions = BucketProbe(perMinute: 2)
            var last = HTTPResponse.Status.ok
            let (decided, decisionRefused) = try await decisions.untilRefused { index in
                let id = try await gate(index)
                last = try await LiveCall.call(approvals, .post, "/v1/approval-gates/\(id)/decision", token: token, json: ["decision": "approve"]).0
                return last == .ok
            }
            #expect(
                decisionRefused && last == .tooManyRequests && decisions.fits(decided),
                "\(decided) decisions admitted in \(decisions.seconds) s at 2 a minute, then \(last)"
            )
            let undecided = gates[decided]
            // Another person is not held back.
            let other = try await harness.token(subject: "calm")
            #expect(
                try await LiveCall.call(approvals, .post, "/v1/approval-gates/\(undecided)/decision", token: other, json: ["decision": "approve"]).0
                    == .ok
            )
        }
    }

    @Test("a gate nobody decides expires, rejected (fail closed), and its agent hears it")
    func expiry() async throws {
        let harness = try await ApprovalsHarness()
        try await harness.run { ingest, control, approvals in
            let session = try await harness.session(ingest, control, agent: "a1")
            let gate = try await H.open(approvals, session: session, ["expiresInSeconds": 1])
            let outcome = try #require(try await H.gateOutcome(control, session: session), "no expiry reached the agent")
            #expect(outcome["gateId"] as? String == gate)
            #expect(outcome["status"] as? String == "expired")
            #expect(outcome["allow"] as? Bool == false)
            let token = try await harness.token()
            let (status, late) = try await LiveCall.call(
                approvals,
                .post,
                "/v1/approval-gates/\(gate)/decision",
                token: token,
                json: ["decision": "approve"]
            )
            #expect(status == .conflict)
            #expect((late["receipt"] as? [String: Any])?["decidedBy"] as? String == "system")
        }
    }

    @Test("terminating the agent from control-api cancels its pending gates; its other gates and other agents' stay")
    func terminateCancels() async throws {
        let harness = try await ApprovalsHarness()
        try await harness.run { ingest, control, approvals in
            let key = try await harness.live.createKey(ingest)
            // The fleet must know the agents for control-api to address them.
            for agent in ["a1", "a2"] {
                let (status, _) = try await harness.live.postEvents(
                    ingest,
                    key: key,
                    [["msgId": "s-\(agent)", "swarmId": "s1", "agentId": agent, "kind": "state", "state": "running"]]
                )
                #expect(status == .ok)
            }
            let one = try await harness.session(ingest, control, agent: "a1")
            let two = try await harness.session(ingest, control, agent: "a2")
            let doomed = try await H.open(approvals, session: one)
            let kept = try await H.open(approvals, session: two)
            let token = try await harness.token(scopes: [.agentsControl, .streamRead, .approvalsDecide])
            #expect(await eventually { (try? await LiveCall.call(control, .get, "/v1/agents/a1", token: token).0) == .ok })
            let (accepted, _) = try await LiveCall.call(
                control,
                .post,
                "/v1/agents/a1/control",
                token: token,
                json: ["action": "terminate", "reason": "runaway agent", "requestId": "kill-1", "confirm": "TERMINATE"]
            )
            #expect(accepted == .accepted)
            let cancelled = await eventually(timeout: .seconds(15)) {
                let (_, detail) = (try? await LiveCall.call(approvals, .get, "/v1/approval-gates/\(doomed)", token: token)) ?? (.ok, [:])
                return (detail["gate"] as? [String: Any])?["status"] as? String == "cancelled"
            }
            #expect(cancelled)
            let (_, other) = try await LiveCall.call(approvals, .get, "/v1/approval-gates/\(kept)", token: token)
            #expect((other["gate"] as? [String: Any])?["status"] as? String == "pending")
        }
    }
}

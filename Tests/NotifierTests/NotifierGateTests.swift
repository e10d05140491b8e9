import Approvals
import ControlAPI
import Foundation
import HummingbirdTesting
import Ingest
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

/// From an agent's gate to the phone: approvals publishes the opening, the notifier pushes it.
@Suite("Notifier: an approval gate pushed end to end (live ingest, control-api, approvals)")
struct NotifierGateTests {
    @Test("a gate an agent opens reaches the registered phone with the approval category, its id and deep link")
    func gateToPush() async throws {
        let harness = try await NotifierHarness.start()
        let live = harness.live
        try await live.application(IngestService.self).test(.router) { ingest in
            try await live.application(ControlAPIService.self).test(.router) { control in
                try await live.application(ApprovalsService.self).test(.router) { approvals in
                    try await harness.run { notifier in
                        try await harness.register(notifier, device: "phone", token: 1)
                        let key = try await live.createKey(ingest)
                        let (status, session) = try await LiveCall.call(
                            control,
                            .post,
                            "/v1/agent/sessions",
                            token: key,
                            json: ["swarmId": "checkout", "agentId": "a1"]
                        )
                        #expect(status == .created, "\(session)")
                        let sessionToken = try #require(session["token"] as? String)
                        let (opened, gate) = try await LiveCall.call(
                            approvals,
                            .post,
                            "/v1/agent/gates",
                            token: sessionToken,
                            json: ["idempotencyKey": "k1", "summary": "rm -rf build", "tool": "Bash", "toolInput": ["command": "rm -rf build"]]
                        )
                        #expect(opened == .created, "\(gate)")
                        let gateID = try #require(gate["gateId"] as? String)
                        let push = try #require(try await harness.waitForPushes(1).first)
                        let payload = NotifierHarness.payload(push)
                        #expect(payload["type"] as? String == "approval_gate" && payload["gateId"] as? String == gateID)
                        #expect((payload["webUrl"] as? String)?.hasSuffix("/gates/\(gateID)") == true)
                        #expect((payload["aps"] as? [String: Any])?["category"] as? String == "APPROVAL_GATE")
                        #expect(push.collapseID == "gate-\(gateID)" && push.deviceToken == NotifierHarness.apnsToken(1))
                        // No tool input travels in a push.
                        #expect(payload["toolInput"] == nil && payload["tool"] == nil)
                    }
                }
            }
        }
        try await harness.stop()
    }
}

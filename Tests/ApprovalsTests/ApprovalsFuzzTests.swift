import Contracts
import Foundation
import HummingbirdTesting
import ServiceKit
import TestSupport
import Testing

@Suite("Approvals fuzzed from its OpenAPI document (schemathesis, live NATS and Postgres)", .tags(.heavy))
struct ApprovalsFuzzTests {
    typealias H = ApprovalsHarness

    @Test("no generated request gets a 5xx, or a status the document does not list, from any operation")
    func noServerErrors() async throws {
        let harness = try await ApprovalsHarness()
        try await harness.run(.live) { ingest, control, approvals in
            // Something to find: a pending gate, a decided one.
            let session = try await harness.session(ingest, control, agent: "a1")
            _ = try await H.open(approvals, session: session)
            let decided = try await H.open(approvals, session: session)
            let phone = try await harness.token(scopes: Set(Scope.allCases))
            #expect(
                try await LiveCall.call(approvals, .post, "/v1/approval-gates/\(decided)/decision", token: phone, json: ["decision": "approve"]).0
                    == .ok
            )
            let port = try #require(approvals.port)
            let seed = Int.random(in: 1..<1_000_000)
            let (people, peopleReport) = try await Schemathesis.run(
                port: port,
                authorization: "Bearer \(phone)",
                pathRegex: "^/v1/approval-gates",
                seed: seed
            )
            #expect(people == 0, "schemathesis (seed \(seed)) found failures:\n\(peopleReport)")
            let (agents, agentReport) = try await Schemathesis.run(
                port: port,
                authorization: "Bearer \(session)",
                pathRegex: "^/v1/agent/gates",
                seed: seed
            )
            #expect(agents == 0, "schemathesis (seed \(seed)) found failures:\n\(agentReport)")
        }
    }
}

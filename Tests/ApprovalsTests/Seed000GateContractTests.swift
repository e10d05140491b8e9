import Foundation
import HummingbirdTesting
import ServiceHarnesses
import TestSupport
import Testing

/// Seed 000's approval gates inbox as its phone would call approvals (§7.1, §8.1, §12.5).
@Suite("Seed 000's phone against approvals: pending gates as its ApprovalGate, decided with its body (live)")
struct Seed000GateContractTests {
    typealias H = ApprovalsHarness

    /// Seed 000 §8.1's `ApprovalGate`.
    struct ApprovalGate: Decodable {
        var id: String
        var status: String
        var summary: String
        var requestedAt: Date
        var expiresAt: Date?
        var webUrl: String?
    }

    struct Page: Decodable {
        var gates: [ApprovalGate]
    }

    @Test("GET /v1/approval-gates?status=pending decodes as the seed's gates with their id; its decision body { decision, reason } settles one")
    func pendingAndDecided() async throws {
        let harness = try await H()
        try await harness.run { ingest, control, approvals in
            let session = try await harness.session(ingest, control, agent: "a1")
            let gate = try await H.open(approvals, session: session)
            let token = try await harness.token()
            let decoder = JSONDecoder.apiDates()
            let page = try await approvals.execute(
                uri: "/v1/approval-gates?status=pending",
                method: .get,
                headers: [.authorization: "Bearer \(token)"]
            ) {
                response in
                #expect(response.status == .ok)
                return try decoder.decode(Page.self, from: Data(buffer: response.body))
            }
            let pending = try #require(page.gates.first)
            #expect(page.gates.map(\.id) == [gate])
            #expect(pending.status == "pending" && pending.summary == "rm -rf build" && pending.webUrl?.isEmpty == false)
            #expect(pending.expiresAt.map { $0 > pending.requestedAt } == true)

            // §7.1: `{ decision: "approve|reject", reason }`.
            let (status, receipt) = try await LiveCall.raw(
                approvals,
                .post,
                "/v1/approval-gates/\(pending.id)/decision",
                token: token,
                body: #"{"decision":"reject","reason":"not on a Friday"}"#
            )
            #expect(status == .ok, "\(receipt)")
            let after = try await approvals.execute(
                uri: "/v1/approval-gates?status=pending",
                method: .get,
                headers: [.authorization: "Bearer \(token)"]
            ) {
                try decoder.decode(Page.self, from: Data(buffer: $0.body))
            }
            #expect(after.gates.isEmpty)
        }
    }
}

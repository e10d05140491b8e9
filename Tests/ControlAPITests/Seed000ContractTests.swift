import Foundation
import HummingbirdTesting
import NIOCore
import ServiceHarnesses
import TestSupport
import Testing

/// Seed 000 as its phone would call control-api: its requests as the seed writes them, its
/// answers decoded into the seed's entities as the seed declares them (§7.1, §8.1, §12.1).
@Suite("Seed 000's phone against control-api: the overview's activeIncidents, the controls' body (live)")
struct Seed000ContractTests {
    typealias H = ControlHarness

    /// Seed 000 §8.1's `Swarm`.
    struct Swarm: Decodable {
        var id: String
        var name: String
        var status: String
        var activeAgents: Int
        var errorRate: Double
        var updatedAt: Date
    }

    /// Seed 000 §8.1's `Agent`, its status §6.1's four.
    struct Agent: Decodable {
        enum Status: String, Decodable { case running, paused, error, waiting }
        var id: String
        var swarmId: String
        var status: Status
        var taskSummary: String?
        var updatedAt: Date
    }

    /// Seed 000 §12.1's `overview`: `summaryCards`, `activeIncidents[]`, `activeSwarms[]`.
    struct Overview: Decodable {
        var summaryCards: [String: JSONScalarOrObject]
        var activeIncidents: [Seed000.Incident]
        var activeSwarms: [Swarm]
    }

    /// Any JSON value of a card (the seed names the cards, not their fields).
    struct JSONScalarOrObject: Decodable {
        init(from decoder: any Decoder) throws {}
    }

    static func decode<T: Decodable>(_ type: T.Type, _ body: ByteBuffer) throws -> T {
        try JSONDecoder.apiDates().decode(T.self, from: Data(buffer: body))
    }

    @Test(
        "GET /v1/overview decodes as the seed's overview, activeIncidents present without health-monitor; terminate with the seed's body is taken once"
    )
    func overviewAndControls() async throws {
        let harness = try await H()
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            try await harness.announce(ingest, control, key: key, agent: "a1", swarm: "s1")
            _ = try await H.openSession(control, key: key, swarm: "s1", agent: "a1")
            let token = try await harness.token()

            try await control.execute(uri: "/v1/overview", method: .get, headers: [.authorization: "Bearer \(token)"]) { response in
                #expect(response.status == .ok)
                let overview = try Self.decode(Overview.self, response.body)
                // No health-monitor runs here: the list is there, empty, and the answer says stale.
                #expect(overview.activeIncidents.isEmpty)
                let object = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                #expect(object?["healthStale"] as? Bool == true)
                #expect(overview.activeSwarms.map(\.id) == ["s1"] && overview.activeSwarms.first?.activeAgents == 1)
                #expect(!overview.summaryCards.isEmpty)
            }

            // §7.1's GET /v1/agents/{agentId}, and the swarm's agents, in the seed's four statuses
            // (an agent that reported nothing yet waits; one that stopped reporting needs a look).
            try await harness.post(
                ingest,
                key: key,
                [["msgId": UUID().uuidString, "swarmId": "s1", "agentId": "quiet", "kind": "log", "message": "hi"]]
            )
            for (agent, status) in [("a1", Agent.Status.running), ("quiet", .waiting)] {
                let seen = await eventually {
                    (try? await control.execute(uri: "/v1/agents/\(agent)", method: .get, headers: [.authorization: "Bearer \(token)"]) {
                        try Self.decode(Agent.self, $0.body)
                    })?.status == status
                }
                #expect(seen, "\(agent) never read \(status)")
            }

            // §7.1: `{ action: "pause|resume|terminate", reason, requestId }`, nothing more.
            let requestID = UUID().uuidString
            let body = #"{"action":"terminate","reason":"runaway loop","requestId":"\#(requestID)"}"#
            let (first, receipt) = try await H.call(control, .post, "/v1/agents/a1/control", token: token, body: body)
            #expect(first == .accepted, "\(receipt)")
            let (again, repeated) = try await H.call(control, .post, "/v1/agents/a1/control", token: token, body: body)
            #expect(again == .accepted && repeated["requestId"] as? String == requestID)
            #expect(repeated["commands"] as? [[String: Any]] != nil && (repeated["commands"] as? [[String: Any]])?.count == 1, "\(repeated)")
            // A confirmation that is sent must be the right one.
            let (wrong, refusal) = try await H.call(
                control,
                .post,
                "/v1/swarms/s1/control",
                token: token,
                json: ["action": "terminate", "reason": "r", "requestId": UUID().uuidString, "confirm": "yes"]
            )
            #expect(wrong == .badRequest && refusal.errorCode == "InvalidRequest", "\(refusal)")
        }
    }
}

import EventLog
import Foundation
import HummingbirdTesting
import Logging
import ServiceHarnesses
import StreamTestSupport
import TestSupport
import Testing

@Suite("GET /v1/agents/{agentId}/events: an agent's newest events, the stream's frames, paged, tenant-scoped (live)")
struct AgentEventsTests {
    typealias H = ControlHarness
    typealias JSON = [String: Any]

    @Test(
        "newest last, only the agent's, equal to /v1/stream's frames; before pages back; another tenant's agent of the same id is not seen; bad input 400"
    )
    func newestEventsAsStreamed() async throws {
        let harness = try await H()
        try await harness.runWithStream { ingest, control, fanout in
            let key = try await harness.createKey(ingest)
            let token = try await harness.token()
            func log(_ agent: String, _ index: Int) -> JSON {
                [
                    "msgId": "m-\(agent)-\(index)", "swarmId": "s1", "agentId": agent, "kind": "log", "level": "info",
                    "message": "\(agent) line \(index)",
                ]
            }
            try await harness.post(ingest, key: key, (0..<5).flatMap { [log("a1", $0), log("a2", $0)] })
            // The same agent id in another tenant.
            let other = "other-" + harness.tenant
            try await harness.post(ingest, key: try await harness.createKey(ingest, tenant: other), [log("a1", 99)])

            let (status, page) = try await H.call(control, .get, "/v1/agents/a1/events?limit=3", token: token)
            #expect(status == .ok, "\(page)")
            let events = page["events"] as? [JSON] ?? []
            #expect(events.map { $0["message"] as? String } == ["a1 line 2", "a1 line 3", "a1 line 4"], "\(page)")
            let seqs = events.compactMap { ($0["seq"] as? NSNumber)?.int64Value }
            #expect(seqs == seqs.sorted() && seqs.count == 3)
            let before = try #require((page["nextBefore"] as? NSNumber)?.int64Value)
            #expect(before == seqs.first)
            let (_, older) = try await H.call(control, .get, "/v1/agents/a1/events?limit=3&before=\(before)", token: token)
            #expect((older["events"] as? [JSON])?.map { $0["message"] as? String } == ["a1 line 0", "a1 line 1"], "\(older)")
            #expect(older["nextBefore"] == nil)
            // The default is seed 000's 50: all five.
            let (_, all) = try await H.call(control, .get, "/v1/agents/a1/events", token: token)
            let allEvents = all["events"] as? [JSON] ?? []
            #expect(allEvents.count == 5 && all["nextBefore"] == nil)

            // The same frames /v1/stream replays for the agent.
            let stream = StreamClient(port: try #require(fanout.port), token: token)
            let streamed = try await stream.run(sending: [subscribe(lastEventId: 0, filters: ["agentIds": ["a1"]])]) { frame in
                (frame["message"] as? String) == "a1 line 4"
            }
            let frames = streamed.frames.filter { $0["seq"] != nil }
            #expect(frames.count == 5)
            for (mine, theirs) in zip(allEvents, frames) {
                #expect(NSDictionary(dictionary: mine).isEqual(to: theirs), "\(mine) ≠ \(theirs)")
            }

            // The bytes cap is applied by Postgres: past it, no frame is sent, and the read says
            // how many the limit let through (so a page before is offered).
            let (cut, read) = try await harness.live.withDatabase { client in
                try await EventLogReader(client: client, schema: harness.ingestSchema, logger: Logger(label: "test"))
                    .agentEvents(tenant: harness.tenant, agent: "a1", before: nil, limit: 3, maxBytes: 1)
            }
            #expect(cut.map(\.seq) == [seqs.last!] && read == 3, "\(cut.map(\.seq)) \(read)")

            // Nothing for an agent without events, and nothing of the other tenant's a1 here.
            let (_, none) = try await H.call(control, .get, "/v1/agents/nobody/events", token: token)
            #expect((none["events"] as? [JSON])?.isEmpty == true)
            let (_, theirs) = try await H.call(control, .get, "/v1/agents/a1/events", token: try await harness.token(tenant: other))
            #expect((theirs["events"] as? [JSON])?.map { $0["message"] as? String } == ["a1 line 99"], "\(theirs)")

            for query in ["limit=0", "limit=201", "limit=x", "before=0", "before=-3"] {
                let (status, body) = try await H.call(control, .get, "/v1/agents/a1/events?\(query)", token: token)
                #expect(status == .badRequest && body.errorCode == "InvalidRequest", "\(query): \(status) \(body)")
            }
            let (long, _) = try await H.call(control, .get, "/v1/agents/\(String(repeating: "a", count: 300))/events", token: token)
            #expect((400..<500).contains(long.code))
            #expect(try await H.call(control, .get, "/v1/agents/a1/events", token: try await harness.token(scopes: [.admin])).0 == .forbidden)
            #expect(try await H.call(control, .get, "/v1/agents/a1/events").0 == .unauthorized)
        }
    }
}

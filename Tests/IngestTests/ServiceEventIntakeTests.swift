import Contracts
import EventLog
import Foundation
import HummingbirdTesting
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import Ingest

@Suite("Ingest's service lane: services' events in the log, answered after commit; agents cannot forge them")
struct ServiceEventIntakeTests {
    static func event(_ msgID: String, kind: BusEventKind = .approval, tail: String = #","type":"approvalGate","gateId":"g1""#) -> BusServiceEvent {
        var event = BusServiceEvent()
        event.msgID = msgID
        event.swarmID = "s1"
        event.agentID = "a1"
        event.kind = kind
        event.severity = .info
        event.occurredUnixNano = 1_700_000_000_000_000_000
        event.frameTail = Data((tail + "}").utf8)
        return event
    }

    static func batch(_ tenant: String, _ events: [BusServiceEvent]) -> BusServiceEventBatch {
        var batch = BusServiceEventBatch()
        batch.tenantID = tenant
        batch.events = events
        return batch
    }

    @Test("refused: a kind agents post, no or too many events, a bad id, a frame tail that does not continue a JSON object or is too large")
    func refusals() throws {
        let good = Self.event("m1")
        #expect(try ServiceEventIntake.prepare(Self.batch("t1", [good]), maxEventBytes: 1024).count == 1)
        var cases: [BusServiceEventBatch] = [
            Self.batch("t1", [Self.event("m1", kind: .state)]),
            Self.batch("t1", [Self.event("m1", kind: .log)]),
            Self.batch("t1", []),
            Self.batch("t1", Array(repeating: good, count: ServiceEventIntake.maxBatchEvents + 1)),
            Self.batch("", [good]),
            Self.batch("t1", [Self.event("")]),
            Self.batch("t1", [Self.event("m1", tail: #""type":"approvalGate""#)]),
            Self.batch("t1", [Self.event("m1", tail: #","type":"#)]),
            Self.batch("t1", [Self.event("m1", tail: #","x":"# + String(repeating: "1", count: 2000))]),
        ]
        var acpWithoutMessage = Self.event("m1", kind: .acp)
        acpWithoutMessage.frameTail = Data()
        cases.append(Self.batch("t1", [acpWithoutMessage]))
        var acpNotJSONRPC = acpWithoutMessage
        acpNotJSONRPC.acp.threadID = "th1"
        acpNotJSONRPC.acp.direction = "client_to_agent"
        acpNotJSONRPC.acp.body = Data(#"{"not":"jsonrpc"}"#.utf8)
        cases.append(Self.batch("t1", [acpNotJSONRPC]))
        var acp = acpNotJSONRPC
        acp.acp.body = Data(#"{"jsonrpc":"2.0","id":5,"result":{}}"#.utf8)
        let prepared = try #require(try ServiceEventIntake.prepare(Self.batch("t1", [acp]), maxEventBytes: 1024).first)
        #expect(prepared.acp?.body == Array(#"{"jsonrpc":"2.0","id":5,"result":{}}"#.utf8))
        let rest = String(decoding: prepared.acp?.frameRest ?? [], as: UTF8.self)
        #expect(rest.contains(#""origin":"service""#))
        var noSeverity = good
        noSeverity.severity = .unspecified
        cases.append(Self.batch("t1", [noSeverity]))
        // A swarm's metric or incident may belong to no agent; nothing else may.
        var swarmMetric = Self.event("m2", kind: .metric, tail: #","type":"metric","scope":"swarm","name":"error_rate","value":0.1"#)
        swarmMetric.agentID = ""
        var swarmIncident = Self.event("m3", kind: .incident, tail: #","type":"incident","incidentId":"i1""#)
        swarmIncident.agentID = ""
        #expect(try ServiceEventIntake.prepare(Self.batch("t1", [swarmMetric, swarmIncident]), maxEventBytes: 1024).count == 2)
        var agentlessGate = good
        agentlessGate.agentID = ""
        cases.append(Self.batch("t1", [agentlessGate]))
        var swarmless = swarmMetric
        swarmless.swarmID = ""
        cases.append(Self.batch("t1", [swarmless]))
        for batch in cases {
            #expect(throws: APIError.self, "\(batch.events.first.map { "\($0.kind) \($0.frameTail.count)" } ?? "empty")") {
                try ServiceEventIntake.prepare(batch, maxEventBytes: 1024)
            }
        }
    }

    @Test(
        "a batch is committed before the answer, a repeated msgId keeps its seq, an unknown tenant is refused, and the native API has no approval kind"
    )
    func live() async throws {
        let harness = try await IngestHarness()
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let connection = try await TestEnvironment.connect()
            defer { Task { await connection.drain() } }
            let sender = ServiceEventSender(connection: connection, subjects: try Subjects(prefix: harness.prefix))
            var seqs: [Int64] = []
            // The intake subscribes as the service starts: retry until it answers.
            let answered = await eventually(timeout: .seconds(10)) {
                seqs = (try? await sender.send(tenant: harness.tenant, [Self.event("gate-1-opened"), Self.event("gate-1-approved")])) ?? []
                return !seqs.isEmpty
            }
            #expect(answered)
            #expect(seqs.count == 2 && seqs[1] == seqs[0] + 1)
            let stored = try await harness.withDatabase { database in
                var frames: [String] = []
                let rows = try await database.query("SELECT frame FROM events WHERE tenant_id = \(harness.tenant) AND kind = 8 ORDER BY seq")
                for try await frame in rows.decode(ByteBuffer.self) { frames.append(String(buffer: frame)) }
                return frames
            }
            #expect(stored.count == 2)
            #expect(stored.first == #"{"seq":\#(seqs[0]),"eventId":"\#(seqs[0])","type":"approvalGate","gateId":"g1"}"#)
            #expect(try await sender.send(tenant: harness.tenant, [Self.event("gate-1-opened")]) == [seqs[0]])
            let refusal = await #expect(throws: ServiceEventRefusal.self) { try await sender.send(tenant: "no-such-tenant", [Self.event("x")]) }
            #expect(refusal?.retryable == false)

            let (status, answer) = try await harness.post(
                client,
                key: key,
                events: [["msgId": "forged", "swarmId": "s1", "agentId": "a1", "kind": "approval", "gateId": "g1", "status": "approved"]]
            )
            #expect(status == .ok)
            #expect(answer?.rejected == 1)
        }
    }

    @Test("the priority lane takes a few state events and nothing else")
    func lanes() {
        func prepared(_ kind: BusEventKind) -> PreparedEvent {
            PreparedEvent(msgID: "m", swarmID: "s", agentID: "a", kind: kind, severity: .info, occurredAtMilliseconds: 0, frameTail: Array(",}".utf8))
        }
        #expect(IngestController.isPriority([prepared(.state)]))
        #expect(IngestController.isPriority(Array(repeating: prepared(.state), count: IngestController.maxPriorityEvents)))
        #expect(!IngestController.isPriority(Array(repeating: prepared(.state), count: IngestController.maxPriorityEvents + 1)))
        #expect(!IngestController.isPriority([prepared(.state), prepared(.log)]))
        #expect(!IngestController.isPriority([]))
    }
}

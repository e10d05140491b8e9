import Contracts
import Foundation
import Testing

@testable import Ingest

/// `Contracts.IngestEvent`, the clients' type for native batches, against ingest's own parser:
/// what a Swift client encodes is what ingest reads.
@Suite struct IngestEventContractTests {
    @Test func everyFieldAClientSetsIsReadByIngest() throws {
        var state = IngestEvent(kind: "state", msgId: "m1", swarmId: "s", agentId: "a")
        state.state = "paused"
        state.taskSummary = "fix the \"flaky\" test ✓"
        state.ts = 1_700_000_000_123
        state.attrs = ["commandId": "c1", "worker": true, "exitStatus": 3, "nested": .object(["list": .array([.null, 1])])]
        var usage = IngestEvent(kind: "usage", msgId: "m2", swarmId: "s", agentId: "a")
        usage.model = "claude-sonnet-4-5"
        usage.inputTokens = 8_000_000_000
        usage.outputTokens = 12
        usage.costUsd = 0.125
        let bytes = Array(try JSONEncoder().encode(IngestBatch(events: [state, usage])))
        let parsed = try NativeBatchParser.parse(bytes).map { try $0.get() }
        #expect(parsed.count == 2)
        #expect(parsed[0].msgId == "m1" && parsed[0].kind == "state" && parsed[0].state == "paused")
        #expect(parsed[0].taskSummary == state.taskSummary && parsed[0].ts == state.ts)
        guard case .object(let attrs)? = parsed[0].attrs else {
            Issue.record("attrs did not arrive as an object")
            return
        }
        #expect(attrs.first { $0.0 == "commandId" }?.1 == .string("c1"))
        #expect(attrs.first { $0.0 == "worker" }?.1 == .bool(true))
        #expect(attrs.first { $0.0 == "exitStatus" }?.1 == .number(3))
        #expect(parsed[1].inputTokens == 8_000_000_000 && parsed[1].outputTokens == 12 && parsed[1].costUsd == 0.125)
        #expect(parsed[1].model == "claude-sonnet-4-5")
    }

    @Test func fieldsLeftUnsetAreAbsentNotNull() throws {
        let json = String(decoding: try JSONEncoder().encode(IngestEvent(kind: "log", msgId: "m")), as: UTF8.self)
        #expect(!json.contains("null"))
        let decoded = try JSONDecoder().decode(IngestEvent.self, from: Data(json.utf8))
        #expect(decoded == IngestEvent(kind: "log", msgId: "m"))
    }
}

import Foundation
import Testing

@testable import EventLog
@testable import Ingest

/// The OTLP mappings without a server (pure): what events an export becomes.
@Suite("OTLP mappings (unit)")
struct OTLPMappingTests {
    static func frames(_ batch: OTLPBatch) throws -> [[String: Any]] {
        try batch.events.enumerated().map { index, event in
            try #require(try JSONSerialization.jsonObject(with: Data(event.frame(seq: Int64(index + 1)))) as? [String: Any])
        }
    }

    @Test("Claude Code's log events: a prompt log, a failed tool call, usage with tokens and cost, an API error")
    func claudeCode() throws {
        var batch = OTLPBatch(now: 1_700_000_000_000, maxEventBytes: 65536, json: false)
        batch.add(OTLPPayloads.claudeCodeLogs(nanos: 1_700_000_000_000_000_000))
        let frames = try Self.frames(batch)
        #expect(frames.map { $0["type"] as? String } == ["log", "toolCall", "usage", "log"])
        #expect(frames.allSatisfy { $0["swarmId"] as? String == "claude-code" && $0["agentId"] as? String == "sess-7f3a" })
        #expect(frames[1]["tool"] as? String == "Bash")
        #expect(frames[1]["ok"] as? Bool == false)
        #expect(frames[1]["latencyMs"] as? Double == 812)
        #expect(frames[2]["inputTokens"] as? Int == 1500)
        #expect(frames[2]["costUsd"] as? Double == 0.0123)
        #expect(frames[3]["severity"] as? String == "error")
        #expect(batch.items == 4)
        #expect(batch.rejectedItems.isEmpty)
    }

    @Test("the same export maps to the same msg ids (a retried export is de-duplicated), another to others")
    func deterministicIDs() {
        var first = OTLPBatch(now: 1, maxEventBytes: 65536, json: false)
        first.add(OTLPPayloads.claudeCodeLogs(nanos: 1_700_000_000_000_000_000))
        var again = OTLPBatch(now: 2, maxEventBytes: 65536, json: false)
        again.add(OTLPPayloads.claudeCodeLogs(nanos: 1_700_000_000_000_000_000))
        var later = OTLPBatch(now: 1, maxEventBytes: 65536, json: false)
        later.add(OTLPPayloads.claudeCodeLogs(nanos: 1_700_000_000_000_000_999))
        #expect(first.events.map(\.msgID) == again.events.map(\.msgID))
        #expect(Set(first.events.map(\.msgID)).isDisjoint(with: later.events.map(\.msgID)))
        #expect(Set(first.events.map(\.msgID)).count == first.events.count)
    }

    @Test("an item whose event is over the size limit is rejected, the others stay")
    func oversized() {
        var batch = OTLPBatch(now: 1, maxEventBytes: 300, json: false)
        batch.add(OTLPPayloads.claudeCodeLogs(nanos: 1_700_000_000_000_000_000))
        #expect(batch.items == 4)
        #expect(!batch.rejectedItems.isEmpty)
        #expect(batch.events.allSatisfy { $0.frameTail.count <= 300 })
    }
}

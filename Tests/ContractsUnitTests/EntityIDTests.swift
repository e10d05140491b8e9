import Contracts
import Testing

/// The one identifier rule ingest and control-api share.
@Suite struct EntityIDTests {
    @Test func controlCharactersOfEveryKindAreRefused() {
        for bad in ["a\u{0}b", "a\nb", "a\u{1F}", "a\u{7F}", "next\u{85}line", "csi\u{9B}", ""] {
            #expect(EntityID.problem(bad, field: "agentId") != nil, "\(bad.unicodeScalars.map(\.value))")
        }
        for good in ["agent-1", "ägent ✓", "a\u{A0}b", String(repeating: "é", count: 128)] {
            #expect(EntityID.problem(good, field: "agentId") == nil, "\(good)")
        }
    }

    @Test func pathStepsAreNoIds() {
        #expect(EntityID.problem(".", field: "agentId") == "agentId must not be . or ..")
        #expect(EntityID.problem("..", field: "agentId") == "agentId must not be . or ..")
        #expect(EntityID.problem("...", field: "agentId") == nil)
        #expect(EntityID.problem("a..b", field: "agentId") == nil)
    }

    @Test func theLimitIsInBytes() {
        #expect(EntityID.problem(String(repeating: "x", count: 256), field: "id") == nil)
        #expect(EntityID.problem(String(repeating: "x", count: 257), field: "id") == "id must be 1 to 256 bytes")
        #expect(EntityID.problem(String(repeating: "é", count: 129), field: "id") != nil)  // 258 bytes
    }
}

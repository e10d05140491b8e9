import ServiceKit
import Testing

@Suite("W3C traceparent: what is passed on and what is ignored")
struct TraceParentTests {
    static let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test("the specification's example parses into its trace and parent ids")
    func valid() throws {
        let trace = try #require(TraceParent(Self.valid))
        #expect(trace.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && trace.parentID == "00f067aa0ba902b7")
        #expect(trace.header == Self.valid)
        // A later version is passed on as version 00 of its first four fields.
        let later = try #require(TraceParent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what-comes-next"))
        #expect(later.header == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09")
    }

    @Test("malformed, all-zero, upper-case, version ff and oversized headers are ignored")
    func invalid() {
        let refused = [
            nil, "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09x",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-" + String(repeating: "a", count: 500),
        ]
        for text in refused { #expect(TraceParent(text) == nil, "\(text ?? "nil") should be ignored") }
    }
}

import Testing

@testable import Ingest

@Suite("Native batch parser")
struct NativeBatchParserTests {
    @Test("escapes, \\u escapes and surrogate pairs decode; unknown keys are skipped; attrs keep their structure")
    func strings() throws {
        let body = #"""
            {"meta": {"x": [1, {"y": null}]}, "events": [
              {"msgId": "m\u00fc-\ud83d\ude80", "swarmId": "s", "agentId": "a", "kind": "log",
               "message": "tab\there \"q\" \\ \/ \n", "unknown": [true, false],
               "attrs": {"n": -1.5e2, "list": ["a", null, true], "nested": {"k": "v"}}}
            ]}
            """#
        let events = try NativeBatchParser.parse(Array(body.utf8))
        let event = try #require(try events.first?.get())
        #expect(event.msgId == "mü-🚀")
        #expect(event.message == "tab\there \"q\" \\ / \n")
        #expect(
            event.attrs
                == .object([("n", .number(-150)), ("list", .array([.string("a"), .null, .bool(true)])), ("nested", .object([("k", .string("v"))]))])
        )
    }

    @Test("a wrong type rejects its event only, naming the field; a missing required field too")
    func itemProblems() throws {
        let body =
            #"{"events": [{"msgId": 1, "swarmId": "s", "agentId": "a", "kind": "log"}, {"swarmId": "s", "agentId": "a", "kind": "log"}, "x", {"msgId": "ok", "swarmId": "s", "agentId": "a", "kind": "log", "ok": "yes"}]}"#
        let events = try NativeBatchParser.parse(Array(body.utf8))
        #expect(events.count == 4)
        let reasons = events.map { result -> String? in
            if case .failure(let rejection) = result { return rejection.reason }
            return nil
        }
        #expect(
            reasons == ["events[0].msgId must be a string", "msgId is required", "events[2] must be an object", "events[3].ok must be a boolean"]
        )
        if case .failure(let rejection) = events[3] { #expect(rejection.msgId == "ok") }
    }

    @Test(
        "broken JSON fails the whole body",
        arguments: [
            "", "{", "[]", #"{"events": {}}"#, #"{"events": [}"#, #"{"events": []} x"#, "{\"events\": [\"\u{01}\"]}", #"{"events": ["\ud800"]}"#,
            #"{"events": [1e999]}"#, #"{"events": [01]}"#, #"{"events": [1.]}"#, #"{"events": [-]}"#, #"{"events": [.5]}"#, #"{"events": [+1]}"#,
            #"{"events": [1e]}"#, #"{"x": "#,
            #"{"events": [], "deep": "# + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "}",
        ]
    )
    func malformed(body: String) {
        #expect(throws: NativeBatchParser.Malformed.self) { try NativeBatchParser.parse(Array(body.utf8)) }
    }
}

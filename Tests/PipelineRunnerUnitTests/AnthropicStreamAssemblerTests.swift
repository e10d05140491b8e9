import Testing

@testable import Anthropic

/// How a stream's events become a response: what is read, what is ignored, what fails.
@Suite("Anthropic stream assembly")
struct AnthropicStreamAssemblerTests {
    static let start = SSEEvent(
        event: "message_start",
        data: #"""
            {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],
            "stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1,"cache_read_input_tokens":7}}}
            """#
    )

    static func delta(_ text: String) -> SSEEvent {
        SSEEvent(event: "content_block_delta", data: #"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\#(text)"}}"#)
    }

    static let stop = [
        SSEEvent(event: "content_block_stop", data: #"{"type":"content_block_stop","index":0}"#),
        SSEEvent(event: "message_delta", data: #"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}"#),
        SSEEvent(event: "message_stop", data: #"{"type":"message_stop"}"#),
    ]

    static func assemble(_ events: [SSEEvent]) throws(AnthropicError) -> (texts: [String], response: AnthropicResponse) {
        var assembler = AnthropicStreamAssembler()
        var texts: [String] = []
        for event in events {
            if let text = try assembler.apply(event) { texts.append(text) }
        }
        return (texts, try assembler.response(requestID: "req_1", attempts: 1))
    }

    @Test("text deltas in order; pings, other deltas, other blocks and unknown events ignored; usage from start and delta")
    func assembles() throws {
        let events =
            [
                Self.start,
                SSEEvent(event: "content_block_start", data: #"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#),
                SSEEvent(event: "ping", data: #"{"type": "ping"}"#),
                Self.delta("Hello"),
                SSEEvent(
                    event: "content_block_delta",
                    data: #"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{"}}"#
                ),
                SSEEvent(event: "brand_new_event", data: #"{"type":"brand_new_event","whatever":[1,2]}"#),
                SSEEvent(event: nil, data: #"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", world"}}"#),
                SSEEvent(event: nil, data: "not json at all"),
            ] + Self.stop + [Self.delta("after the end")]
        let (texts, response) = try Self.assemble(events)
        #expect(texts == ["Hello", ", world"])
        #expect(response.text == "Hello, world")
        #expect(response.id == "msg_1")
        #expect(response.model == "claude-haiku-4-5")
        #expect(response.stopReason == "end_turn")
        #expect(response.requestID == "req_1")
        #expect(response.usage == AnthropicUsage(inputTokens: 25, outputTokens: 15, cacheCreationInputTokens: 0, cacheReadInputTokens: 7))
    }

    @Test("no message_stop: invalid response")
    func noStop() {
        #expect(throws: AnthropicError.invalidResponse("stream ended before message_stop")) {
            _ = try Self.assemble([Self.start, Self.delta("Hi")])
        }
    }

    @Test("no message_start: invalid response")
    func noStart() {
        #expect(throws: AnthropicError.invalidResponse("stream without message_start")) {
            _ = try Self.assemble([Self.delta("Hi")] + Self.stop)
        }
    }

    @Test("error events: overloaded_error is overloaded, others invalid responses naming their type")
    func errorEvents() throws {
        let overloaded = SSEEvent(event: "error", data: #"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
        #expect(throws: AnthropicError.overloaded("Overloaded")) { _ = try Self.assemble([Self.start, Self.delta("Hi"), overloaded]) }

        let apiError = SSEEvent(event: "error", data: #"{"type":"error","error":{"type":"api_error","message":"Internal"}}"#)
        do throws(AnthropicError) {
            _ = try Self.assemble([Self.start, apiError])
            Issue.record("an api_error event was accepted")
        } catch {
            guard case .invalidResponse(let description) = error else {
                Issue.record("expected invalidResponse, got \(error)")
                return
            }
            #expect(description.contains("api_error"))
        }
    }

    @Test("a known event with undecodable data: invalid response")
    func undecodable() {
        #expect(throws: AnthropicError.self) {
            _ = try Self.assemble([SSEEvent(event: "message_start", data: "{not json")])
        }
    }
}

import Anthropic
import AnthropicLocal
import Foundation
import Testing

/// The production client against the local provider over real HTTP: answers, streams, retries
/// and failures.
@Suite("Anthropic client against the local Messages API")
struct AnthropicClientTests {
    static let system = "You are the researcher of a small team."
    static let stageMessage = "Context from earlier stages.\n\n# Your Job\nResearch the solar panel market\n[words:40]"

    static func request(_ message: String = stageMessage, system: String? = system, maxTokens: Int = 1024) -> AnthropicMessagesRequest {
        AnthropicMessagesRequest(model: "claude-sonnet-4-6", maxTokens: maxTokens, system: system, messages: [.user(message)], temperature: 0.2)
    }

    @Test("a JSON answer: the stage text, its usage, ids and what was sent")
    func jsonAnswer() async throws {
        try await AnthropicTestHarness.with { harness in
            let response = try await harness.client().complete(Self.request())
            #expect(response.text.hasPrefix("## Research the solar panel market\n\n"))
            #expect(response.model == "claude-sonnet-4-6")
            #expect(response.id == "msg_local_1")
            #expect(response.requestID == "req_local_1")
            #expect(response.stopReason == "end_turn")
            #expect(response.attempts == 1)
            let inputBytes = Self.system.utf8.count + Self.stageMessage.utf8.count
            #expect(
                response.usage
                    == AnthropicUsage(inputTokens: (inputBytes + 3) / 4, outputTokens: 6 + 40, cacheCreationInputTokens: 0, cacheReadInputTokens: 0)
            )
            #expect(response.usage.outputTokens == response.text.split(whereSeparator: \.isWhitespace).count)

            let sent = try #require(harness.server.requests().first)
            #expect(harness.server.requestCount == 1)
            #expect(sent.model == "claude-sonnet-4-6")
            #expect(sent.system == Self.system)
            #expect(sent.userText == Self.stageMessage)
            #expect(sent.maxTokens == 1024)
            #expect(!sent.stream)
            #expect(sent.headers["anthropic-version"] == "2023-06-01")
            #expect(sent.headers["content-type"] == "application/json")
            #expect(sent.headers["x-api-key"] == nil)
            #expect(!sent.headers.values.contains { $0.contains(AnthropicTestHarness.apiKey) })
        }
    }

    @Test("a streamed answer's deltas reassemble to the JSON answer's text, with the same usage")
    func streamMatchesJSON() async throws {
        try await AnthropicTestHarness.with { harness in
            let client = harness.client()
            let json = try await client.complete(Self.request())
            let collector = AnthropicTextCollector()
            let streamed = try await client.stream(Self.request()) { collector.append($0) }
            #expect(collector.texts.count >= 9)
            #expect(collector.texts.joined() == json.text)
            #expect(streamed.text == json.text)
            #expect(streamed.usage == json.usage)
            #expect(streamed.stopReason == "end_turn")
            #expect(streamed.requestID == "req_local_2")
            #expect(streamed.id == "msg_local_2")
            #expect(streamed.attempts == 1)
            let sent = try #require(harness.server.requests().last)
            #expect(sent.stream)
            #expect(sent.headers["accept"] == "text/event-stream")
        }
    }

    @Test("a long streamed answer (many deltas, small network chunks) arrives whole")
    func longStream() async throws {
        try await AnthropicTestHarness.with { harness in
            let collector = AnthropicTextCollector()
            let response = try await harness.client().stream(Self.request("# Your Job\nWrite at length\n[words:5000]", maxTokens: 8000)) {
                collector.append($0)
            }
            #expect(collector.texts.count > 1000)
            #expect(collector.texts.joined() == response.text)
            #expect(response.usage.outputTokens == 5000 + 4)
        }
    }

    @Test("an answer longer than max_tokens stops there with stop_reason max_tokens")
    func maxTokens() async throws {
        try await AnthropicTestHarness.with { harness in
            let response = try await harness.client().complete(Self.request(maxTokens: 7))
            #expect(response.stopReason == "max_tokens")
            #expect(response.usage.outputTokens == 7)
            let streamed = try await harness.client().stream(Self.request(maxTokens: 7)) { _ in }
            #expect(streamed.text == response.text)
            #expect(streamed.stopReason == "max_tokens")
        }
    }

    @Test("429 with retry-after 1, then success: waits the second, two attempts")
    func rateLimitedThenSuccess() async throws {
        try await AnthropicTestHarness.with { harness in
            harness.server.enqueue(.status(429, retryAfterSeconds: 1))
            let clock = ContinuousClock()
            let start = clock.now
            let response = try await harness.client().complete(Self.request())
            #expect(clock.now - start >= .milliseconds(950))
            #expect(response.attempts == 2)
            #expect(response.requestID == "req_local_2")
            #expect(harness.server.requestCount == 2)
            #expect(harness.server.requests().map(\.status) == [429, 200])
        }
    }

    @Test("429 on every attempt: rate limited, with the retry-after")
    func rateLimitedForGood() async throws {
        try await AnthropicTestHarness.with { harness in
            await #expect(throws: AnthropicError.self) {
                _ = try await harness.client(maxRetries: 0).complete(Self.request("Hello [fault:429]"))
            }
            do throws(AnthropicError) {
                _ = try await harness.client(maxRetries: 0).complete(Self.request("Hello [fault:429]"))
                Issue.record("a 429 answer succeeded")
            } catch {
                guard case .rateLimited(let retryAfter, let message) = error else {
                    Issue.record("expected rateLimited, got \(error)")
                    return
                }
                #expect(retryAfter == 1)
                #expect(message.contains("rate limit"))
                #expect(error.userMessage == "Rate limit reached. Please wait and try again.")
            }
        }
    }

    @Test("529 on every attempt: overloaded after three attempts")
    func persistentOverload() async throws {
        try await AnthropicTestHarness.with { harness in
            for _ in 0..<3 { harness.server.enqueue(.status(529, retryAfterSeconds: nil)) }
            await #expect(throws: AnthropicError.overloaded("Overloaded")) {
                _ = try await harness.client().complete(Self.request())
            }
            #expect(harness.server.requestCount == 3)
            #expect(harness.server.pendingFaults == 0)
        }
    }

    @Test("a streamed request answered 529 every time (marker) is retried, then overloaded, with no text")
    func persistentOverloadStreaming() async throws {
        try await AnthropicTestHarness.with { harness in
            let collector = AnthropicTextCollector()
            await #expect(throws: AnthropicError.overloaded("Overloaded")) {
                _ = try await harness.client().stream(Self.request("Go [fault:529]")) { collector.append($0) }
            }
            #expect(harness.server.requestCount == 3)
            #expect(collector.texts.isEmpty)
        }
    }

    @Test("a 500 then success is retried once")
    func serverErrorThenSuccess() async throws {
        try await AnthropicTestHarness.with { harness in
            harness.server.enqueue(.status(500, retryAfterSeconds: nil))
            let response = try await harness.client().complete(Self.request())
            #expect(response.attempts == 2)
        }
    }

    @Test("a wrong key: authentication error, not retried")
    func wrongKey() async throws {
        try await AnthropicTestHarness.with { harness in
            await #expect(throws: AnthropicError.authentication("invalid x-api-key")) {
                _ = try await harness.client(apiKey: "sk-ant-wrong").complete(Self.request())
            }
            #expect(harness.server.requestCount == 1)
            #expect(harness.server.requests().first?.status == 401)
        }
    }

    @Test("no key: missingAPIKey before any request")
    func missingKey() async throws {
        try await AnthropicTestHarness.with { harness in
            #expect(!harness.client(apiKey: nil).hasAPIKey)
            await #expect(throws: AnthropicError.missingAPIKey) {
                _ = try await harness.client(apiKey: nil).complete(Self.request())
            }
            await #expect(throws: AnthropicError.missingAPIKey) {
                _ = try await harness.client(apiKey: "  ").stream(Self.request()) { _ in }
            }
            #expect(harness.server.requestCount == 0)
        }
    }

    @Test("an invalid request (400) is not retried and carries the API's message")
    func invalidRequest() async throws {
        try await AnthropicTestHarness.with { harness in
            await #expect(
                throws: AnthropicError.invalidRequest(
                    status: 400,
                    type: "invalid_request_error",
                    message: "max_tokens: Input should be greater than or equal to 1"
                )
            ) {
                _ = try await harness.client().complete(Self.request(maxTokens: 0))
            }
            #expect(harness.server.requestCount == 1)
        }
    }

    @Test("an error event mid-stream after text: thrown, not retried")
    func errorMidStream() async throws {
        try await AnthropicTestHarness.with { harness in
            harness.server.enqueue(.errorMidStream)
            let collector = AnthropicTextCollector()
            await #expect(throws: AnthropicError.overloaded("Overloaded")) {
                _ = try await harness.client().stream(Self.request()) { collector.append($0) }
            }
            #expect(!collector.texts.isEmpty)
            #expect(harness.server.requestCount == 1)
        }
    }

    @Test("a stream that ends without message_stop: invalid response, not retried")
    func truncatedStream() async throws {
        try await AnthropicTestHarness.with { harness in
            harness.server.enqueue(.truncatedStream)
            let collector = AnthropicTextCollector()
            await #expect(throws: AnthropicError.invalidResponse("stream ended before message_stop")) {
                _ = try await harness.client().stream(Self.request()) { collector.append($0) }
            }
            #expect(!collector.texts.isEmpty)
            #expect(harness.server.requestCount == 1)
        }
    }

    @Test("a JSON body cut in half: invalid response")
    func truncatedJSON() async throws {
        try await AnthropicTestHarness.with { harness in
            do throws(AnthropicError) {
                _ = try await harness.client().complete(Self.request("Hi [fault:truncate]"))
                Issue.record("a truncated body was accepted")
            } catch {
                guard case .invalidResponse = error else {
                    Issue.record("expected invalidResponse, got \(error)")
                    return
                }
                #expect(error.userMessage == "Unexpected response from AI provider.")
            }
            #expect(harness.server.requestCount == 1)
        }
    }

    @Test("a dropped connection is retried")
    func droppedConnection() async throws {
        try await AnthropicTestHarness.with { harness in
            harness.server.enqueue(.dropConnection)
            let response = try await harness.client().complete(Self.request())
            #expect(response.attempts == 2)
        }
    }

    @Test("a first byte later than the timeout is a network error; within it, an answer")
    func slowFirstByte() async throws {
        try await AnthropicTestHarness.with { harness in
            harness.server.enqueue(.slowFirstByte(.milliseconds(1500)))
            do throws(AnthropicError) {
                _ = try await harness.client(maxRetries: 0, timeout: .milliseconds(300)).complete(Self.request())
                Issue.record("a slow answer beat the timeout")
            } catch {
                guard case .network = error else {
                    Issue.record("expected a network error, got \(error)")
                    return
                }
            }
            let response = try await harness.client().stream(Self.request("# Your Job\nWait [fault:slow-first-byte-ms:200]")) { _ in }
            #expect(response.text.hasPrefix("## Wait"))
        }
    }

    @Test("cancelling the task ends a stream and a backoff with cancelled")
    func cancellation() async throws {
        try await AnthropicTestHarness.with { harness in
            let client = harness.client()
            let collector = AnthropicTextCollector()
            let streaming = Task {
                try await client.stream(Self.request("# Your Job\nSlowly [words:400] [delay-ms:50]")) { collector.append($0) }
            }
            try await Task.sleep(for: .milliseconds(300))
            streaming.cancel()
            await #expect(throws: AnthropicError.cancelled) { _ = try await streaming.value }
        }
        // On a server of its own: on a loaded host the cancelled stream's request may reach its
        // server only now, and would take the fault queued below.
        try await AnthropicTestHarness.with { harness in
            let client = harness.client()
            // A backoff of 10 s, cancelled after 0.2 s: a client that waited it out takes 10 s.
            harness.server.enqueue(.status(429, retryAfterSeconds: 10))
            let clock = ContinuousClock()
            let start = clock.now
            let waiting = Task { try await client.complete(Self.request()) }
            try await Task.sleep(for: .milliseconds(200))
            waiting.cancel()
            await #expect(throws: AnthropicError.cancelled) { _ = try await waiting.value }
            #expect(clock.now - start < .seconds(5))
        }
    }

    @Test("the planner's answer holds a fenced json block with three stages naming the goal")
    func plannerAnswer() async throws {
        try await AnthropicTestHarness.with { harness in
            let goal = #"Compare "solar" panels \ batteries for a small café"#
            let request = Self.request(
                "  \(goal)  \nMore detail on the second line.",
                system: "You plan work. Answer with a ```json block whose key is pipeline."
            )
            let response = try await harness.client().complete(request)
            let opening = try #require(response.text.range(of: "```json\n"))
            let closing = try #require(response.text.range(of: "\n```", range: opening.upperBound..<response.text.endIndex))
            let json = Data(response.text[opening.upperBound..<closing.lowerBound].utf8)
            let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
            let stages = try #require(object["pipeline"] as? [[String: Any]])
            #expect(stages.count == 3)
            #expect(stages.compactMap { $0["role"] as? String } == ["researcher", "producer", "qaReviewer"])
            #expect(stages.first?["task"] as? String == "Research: \(goal)")
            #expect((stages.first?["researchURLs"] as? [Any])?.isEmpty == true)
            #expect(response.text.split(separator: "\n").first?.contains("{") == false)

            let streamed = try await harness.client().stream(request) { _ in }
            #expect(streamed.text == response.text)
        }
    }

    @Test("[conversational]: prose, no JSON")
    func conversational() async throws {
        try await AnthropicTestHarness.with { harness in
            let response = try await harness.client().complete(
                Self.request("Hi there [conversational]", system: "You plan work. Answer with a json block whose key is pipeline.")
            )
            #expect(!response.text.isEmpty)
            #expect(!response.text.contains("{"))
            #expect(!response.text.contains("}"))
            #expect(!response.text.contains("```"))
        }
    }
}

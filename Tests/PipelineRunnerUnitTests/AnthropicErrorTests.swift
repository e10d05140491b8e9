import Anthropic
import Foundation
import Testing

@Suite("Anthropic errors: statuses and error events mapped, retry decisions, retry-after")
struct AnthropicErrorTests {
    @Test(
        "HTTP statuses map to seed 001's kinds",
        arguments: [
            (400, "invalid_request_error", AnthropicError.invalidRequest(status: 400, type: "invalid_request_error", message: "m")),
            (401, "authentication_error", .authentication("m")),
            (403, "permission_error", .authentication("m")),
            (404, "not_found_error", .invalidRequest(status: 404, type: "not_found_error", message: "m")),
            (413, "request_too_large", .invalidRequest(status: 413, type: "request_too_large", message: "m")),
            (429, "rate_limit_error", .rateLimited(retryAfterSeconds: 3, message: "m")),
            (500, "api_error", .server(status: 500, message: "m")),
            (503, "api_error", .server(status: 503, message: "m")),
            (529, "overloaded_error", .overloaded("m")),
        ]
    )
    func statusMapping(status: Int, type: String, expected: AnthropicError) {
        #expect(AnthropicError(status: status, errorType: type, message: "m", retryAfterSeconds: 3) == expected)
    }

    @Test("without an error body the status names the type and the message")
    func withoutBody() {
        #expect(
            AnthropicError(status: 404, errorType: nil, message: nil) == .invalidRequest(status: 404, type: "not_found_error", message: "HTTP 404")
        )
        #expect(
            AnthropicError(status: 413, errorType: nil, message: nil) == .invalidRequest(status: 413, type: "request_too_large", message: "HTTP 413")
        )
        #expect(AnthropicError(status: 502, errorType: nil, message: nil) == .server(status: 502, message: "HTTP 502"))
        #expect(AnthropicError(status: 302, errorType: nil, message: nil) == .invalidResponse("unexpected HTTP status 302"))
    }

    @Test("stream error events: overloaded_error is overloaded, others an invalid response naming the type")
    func streamErrors() {
        #expect(AnthropicError(streamErrorType: "overloaded_error", message: "Overloaded") == .overloaded("Overloaded"))
        guard case .invalidResponse(let description) = AnthropicError(streamErrorType: "api_error", message: "boom") else {
            Issue.record("api_error is not an invalid response")
            return
        }
        #expect(description.contains("api_error"))
        #expect(description.contains("boom"))
    }

    @Test("user-facing messages use seed 001's wording")
    func userMessages() {
        #expect(AnthropicError.missingAPIKey.userMessage == "API key not set. Go to Settings to add your Anthropic key.")
        #expect(AnthropicError.rateLimited(retryAfterSeconds: nil, message: "x").userMessage == "Rate limit reached. Please wait and try again.")
        #expect(AnthropicError.overloaded("x").userMessage == "Server error (529). Please try again.")
        #expect(AnthropicError.server(status: 503, message: "x").userMessage == "Server error (503). Please try again.")
        #expect(AnthropicError.network("connection refused").userMessage == "Network error: connection refused")
        #expect(AnthropicError.invalidResponse("x").userMessage == "Unexpected response from AI provider.")
    }

    @Test("retryable: rate limits, overload, 5xx, network, 408 and 409; never auth, bad requests or bad answers")
    func retryable() {
        #expect(AnthropicError.rateLimited(retryAfterSeconds: nil, message: "").retryable)
        #expect(AnthropicError.overloaded("").retryable)
        #expect(AnthropicError.server(status: 500, message: "").retryable)
        #expect(AnthropicError.network("").retryable)
        #expect(AnthropicError.invalidRequest(status: 408, type: "", message: "").retryable)
        #expect(!AnthropicError.invalidRequest(status: 400, type: "", message: "").retryable)
        #expect(!AnthropicError.authentication("").retryable)
        #expect(!AnthropicError.missingAPIKey.retryable)
        #expect(!AnthropicError.invalidResponse("").retryable)
        #expect(!AnthropicError.cancelled.retryable)
    }

    @Test(
        "which statuses are retried, and x-should-retry",
        arguments: [
            (408, nil, true), (409, nil, true), (429, nil, true), (500, nil, true), (502, nil, true), (529, nil, true),
            (400, nil, false), (401, nil, false), (403, nil, false), (404, nil, false), (413, nil, false), (422, nil, false),
            (529, "false", false), (429, "false", false), (422, "true", true), (400, "true", false), (401, "true", false),
        ] as [(Int, String?, Bool)]
    )
    func shouldRetry(status: Int, header: String?, expected: Bool) {
        #expect(AnthropicRetryPolicy.shouldRetry(status: status, shouldRetryHeader: header) == expected)
    }

    @Test("retry-after-ms wins, then retry-after in seconds or as an HTTP date")
    func retryAfterParsing() throws {
        #expect(AnthropicRetryPolicy.retryAfterSeconds(retryAfterMilliseconds: "1500", retryAfter: "9") == 1.5)
        #expect(AnthropicRetryPolicy.retryAfterSeconds(retryAfterMilliseconds: nil, retryAfter: "2") == 2)
        #expect(AnthropicRetryPolicy.retryAfterSeconds(retryAfterMilliseconds: nil, retryAfter: " 0.25 ") == 0.25)
        #expect(AnthropicRetryPolicy.retryAfterSeconds(retryAfterMilliseconds: "soon", retryAfter: "3") == 3)
        #expect(AnthropicRetryPolicy.retryAfterSeconds(retryAfterMilliseconds: nil, retryAfter: "later") == nil)
        #expect(AnthropicRetryPolicy.retryAfterSeconds(retryAfterMilliseconds: nil, retryAfter: nil) == nil)
        let now = try #require(ISO8601DateFormatter().date(from: "2015-10-21T07:27:50Z"))
        let seconds = AnthropicRetryPolicy.retryAfterSeconds(retryAfterMilliseconds: nil, retryAfter: "Wed, 21 Oct 2015 07:28:00 GMT", now: now)
        #expect(seconds == 10)
    }

    @Test("the wait: retry-after when above 0 and at most 60 s, else min(0.5·2ⁿ, 8) s times a jitter in 0.75…1")
    func delays() {
        let policy = AnthropicRetryPolicy()
        #expect(policy.maxRetries == 2)
        #expect(policy.delay(retriesSoFar: 0, retryAfter: 1, jitter: 1) == .seconds(1))
        #expect(policy.delay(retriesSoFar: 0, retryAfter: 60, jitter: 1) == .seconds(60))
        #expect(policy.delay(retriesSoFar: 0, retryAfter: 61, jitter: 1) == .milliseconds(500))
        #expect(policy.delay(retriesSoFar: 1, retryAfter: 0, jitter: 1) == .seconds(1))
        #expect(policy.delay(retriesSoFar: 1, retryAfter: -5, jitter: 1) == .seconds(1))
        let ceilings: [Duration] = [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8), .seconds(8)]
        for (retries, ceiling) in ceilings.enumerated() {
            #expect(policy.backoff(retriesSoFar: retries, jitter: 1) == ceiling)
            #expect(policy.backoff(retriesSoFar: retries, jitter: 0.75) == ceiling * 0.75)
            let random = policy.backoff(retriesSoFar: retries)
            #expect(random >= ceiling * 0.75 && random <= ceiling)
        }
        #expect(AnthropicRetryPolicy(backoffBase: .milliseconds(10)).backoff(retriesSoFar: 2, jitter: 1) == .milliseconds(40))
    }
}

import AnthropicLocal
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import Testing

/// The local provider's own contract, over raw HTTP: header checks, validation, the error
/// shape, request ids, the event sequence and the control paths.
@Suite("Local Anthropic server: headers, validation, events and control paths")
struct AnthropicLocalServerTests {
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: String

        var errorType: String? { (self.json?["error"] as? [String: Any])?["type"] as? String }
        var errorMessage: String? { (self.json?["error"] as? [String: Any])?["message"] as? String }
        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(self.body.utf8)) as? [String: Any] }
    }

    static func post(
        _ harness: AnthropicTestHarness,
        path: String = "/v1/messages",
        headers: [String: String] = ["x-api-key": AnthropicTestHarness.apiKey, "anthropic-version": "2023-06-01"],
        body: String
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: harness.server.baseURL + path)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await harness.http.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 8 << 20)
        var fields: [String: String] = [:]
        for header in response.headers { fields[header.name.lowercased()] = header.value }
        return Answer(status: Int(response.status.code), headers: fields, body: String(buffer: bytes))
    }

    static let valid = #"{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"Hello"}]}"#

    @Test("key and version headers are checked first, with the API's error bodies and a request id")
    func headerChecks() async throws {
        try await AnthropicTestHarness.with { harness in
            let noKey = try await Self.post(harness, headers: ["anthropic-version": "2023-06-01"], body: Self.valid)
            #expect(noKey.status == 401)
            #expect(noKey.errorType == "authentication_error")
            #expect(noKey.headers["request-id"] == "req_local_1")
            #expect(noKey.json?["request_id"] as? String == "req_local_1")
            #expect(noKey.json?["type"] as? String == "error")

            let noVersion = try await Self.post(harness, headers: ["x-api-key": AnthropicTestHarness.apiKey], body: Self.valid)
            #expect(noVersion.status == 400)
            #expect(noVersion.errorType == "invalid_request_error")
            #expect(noVersion.errorMessage?.contains("anthropic-version") == true)
            #expect(noVersion.headers["request-id"] == "req_local_2")
            #expect(harness.server.requests().allSatisfy { $0.headers["x-api-key"] == nil })
        }
    }

    @Test(
        "bodies the API refuses get 400 invalid_request_error",
        arguments: [
            (#"{"max_tokens":64,"messages":[{"role":"user","content":"x"}]}"#, "model"),
            (#"{"model":"m","messages":[{"role":"user","content":"x"}]}"#, "max_tokens"),
            (#"{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]}"#, "max_tokens"),
            (#"{"model":"m","max_tokens":"many","messages":[{"role":"user","content":"x"}]}"#, "max_tokens"),
            (#"{"model":"m","max_tokens":64,"messages":[]}"#, "messages"),
            (#"{"model":"m","max_tokens":64}"#, "messages"),
            (#"{"model":"m","max_tokens":64,"messages":[{"role":"system","content":"x"}]}"#, "messages.0.role"),
            (#"{"model":"m","max_tokens":64,"messages":[{"role":"user"}]}"#, "messages.0.content"),
            (#"{"model":"m","max_tokens":64,"temperature":3,"messages":[{"role":"user","content":"x"}]}"#, "temperature"),
            ("not json", "JSON"),
        ]
    )
    func validation(body: String, mentions: String) async throws {
        try await AnthropicTestHarness.with { harness in
            let answer = try await Self.post(harness, body: body)
            #expect(answer.status == 400)
            #expect(answer.errorType == "invalid_request_error")
            #expect(answer.errorMessage?.contains(mentions) == true, "\(answer.errorMessage ?? "")")
        }
    }

    @Test("content blocks and a block system prompt are accepted and counted")
    func contentBlocks() async throws {
        try await AnthropicTestHarness.with { harness in
            let body = #"""
                {"model":"m","max_tokens":64,"system":[{"type":"text","text":"abcd"}],
                 "messages":[{"role":"user","content":[{"type":"text","text":"efgh"},{"type":"text","text":"ijkl"}]}]}
                """#
            let answer = try await Self.post(harness, body: body)
            #expect(answer.status == 200)
            let usage = try #require(answer.json?["usage"] as? [String: Any])
            #expect(usage["input_tokens"] as? Int == 3)
            #expect(usage["cache_creation_input_tokens"] as? Int == 0)
            #expect(usage["cache_read_input_tokens"] as? Int == 0)
            #expect(answer.json?["stop_sequence"] is NSNull)
            #expect(harness.server.requests().first?.userText == "efghijkl")
        }
    }

    @Test("the stream's events come in the API's order")
    func eventOrder() async throws {
        try await AnthropicTestHarness.with { harness in
            let body = #"{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Hello [words:12]"}]}"#
            let answer = try await Self.post(harness, body: body)
            #expect(answer.status == 200)
            #expect(answer.headers["content-type"]?.hasPrefix("text/event-stream") == true)
            let names = answer.body.split(separator: "\n").filter { $0.hasPrefix("event: ") }.map { String($0.dropFirst(7)) }
            let deltas = names.filter { $0 == "content_block_delta" }.count
            #expect(deltas == 3)
            #expect(
                names == ["message_start", "content_block_start", "ping"] + Array(repeating: "content_block_delta", count: deltas)
                    + ["content_block_stop", "message_delta", "message_stop"]
            )
        }
    }

    @Test("faults queued over HTTP apply in order, one per request; bad ones are refused")
    func controlFaults() async throws {
        try await AnthropicTestHarness.with { harness in
            let queued = try await Self.post(
                harness,
                path: "/_local/faults",
                headers: [:],
                body: #"{"faults":[{"kind":"status","status":429,"retryAfter":1},{"kind":"status","status":500}]}"#
            )
            #expect(queued.status == 201)
            #expect(harness.server.pendingFaults == 2)
            let first = try await Self.post(harness, body: Self.valid)
            #expect(first.status == 429)
            #expect(first.errorType == "rate_limit_error")
            #expect(first.headers["retry-after"] == "1")
            let second = try await Self.post(harness, body: Self.valid)
            #expect(second.status == 500)
            #expect(second.errorType == "api_error")
            let third = try await Self.post(harness, body: Self.valid)
            #expect(third.status == 200)
            #expect(harness.server.requests().map(\.fault) == [.status(429, retryAfterSeconds: 1), .status(500, retryAfterSeconds: nil), nil])

            let bad = try await Self.post(harness, path: "/_local/faults", headers: [:], body: #"{"faults":[{"kind":"meteor"}]}"#)
            #expect(bad.status == 400)
            #expect(harness.server.pendingFaults == 0)
        }
    }

    @Test("a fault survives its JSON form")
    func faultCoding() throws {
        let faults: [AnthropicLocalFault] = [
            .status(529, retryAfterSeconds: nil), .status(429, retryAfterSeconds: 2), .errorMidStream, .slowFirstByte(.milliseconds(1500)),
            .truncatedStream, .dropConnection,
        ]
        let decoded = try JSONDecoder().decode([AnthropicLocalFault].self, from: JSONEncoder().encode(faults))
        #expect(decoded == faults)
    }

    @Test("the answers are deterministic: same request, same text and usage")
    func deterministic() async throws {
        try await AnthropicTestHarness.with { harness in
            let first = try await Self.post(harness, body: Self.valid)
            let second = try await Self.post(harness, body: Self.valid)
            let firstContent = first.json?["content"] as? [[String: Any]]
            let secondContent = second.json?["content"] as? [[String: Any]]
            #expect(firstContent?.first?["text"] as? String == secondContent?.first?["text"] as? String)
            #expect(first.json?["id"] as? String == "msg_local_1")
            #expect(second.json?["id"] as? String == "msg_local_2")
            #expect(AnthropicLocalAnswer.inputTokens(system: nil, messages: ["Hello"]) == 2)
            #expect(AnthropicLocalAnswer.outputTokens("## Hello\n\nA b.") == 4)
        }
    }

    @Test("starting on a port already bound fails; stopping twice is harmless")
    func portInUse() async throws {
        try await AnthropicTestHarness.with { harness in
            #expect(harness.server.port > 0)
            #expect(harness.server.baseURL == "http://127.0.0.1:\(harness.server.port)")
            await #expect(throws: (any Error).self) {
                let second = try await AnthropicLocalServer.start(port: harness.server.port, logger: AnthropicTestHarness.logger("second"))
                await second.stop()
            }
        }
        let server = try await AnthropicLocalServer.start(logger: AnthropicTestHarness.logger("anthropic-local"))
        await server.stop()
        await server.stop()
    }
}

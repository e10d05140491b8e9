import AsyncHTTPClient
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OTLP
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import Ingest

@Suite("Ingest OTLP/HTTP receivers (live NATS + Postgres)")
struct IngestOTLPTests {
    typealias Frame = [String: Any]

    /// The live feed of the harness's tenant.
    struct Feed {
        let nats: NATSConnection
        let subscription: NATSSubscription

        let subjects: Subjects

        init(_ harness: IngestHarness) async throws {
            self.nats = try await NATSConnection.connect(NATSConfiguration(servers: [try harness.environment["NATS_URL"]!], name: "otlp-observer"))
            self.subjects = try Subjects(prefix: harness.prefix)
            self.subscription = try await self.nats.subscribe(to: self.subjects.events(tenant: harness.tenant))
            try await self.nats.flush()
        }

        /// The next `count` frames, in order.
        func frames(_ count: Int) async throws -> [Frame] {
            let (subscription, subjects) = (self.subscription, self.subjects)
            let payloads = try await withDeadline(.seconds(20), orThrow: ServiceKitError(.natsTimeout, "fewer than \(count) frames arrived")) {
                var payloads: [[UInt8]] = []
                for await message in subscription {
                    payloads += try BusEventBatch.envelopes(in: message.payload, subject: message.subject, subjects: subjects).map { Array($0.frame) }
                    if payloads.count >= count { break }
                }
                return payloads
            }
            var frames: [Frame] = []
            for payload in payloads {
                frames.append(try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? Frame))
            }
            return frames
        }
    }

    static func rows(_ harness: IngestHarness) async throws -> Int {
        try await harness.withDatabase { database in
            let rows = try await database.query("SELECT count(*)::int FROM events WHERE tenant_id = \(harness.tenant)")
            for try await count in rows.decode(Int.self) { return count }
            return -1
        }
    }

    /// Posts `body` to `/v1/logs` until the answer is not `retried`, for 30 s at most.
    static func postLogs(
        _ client: some TestClientProtocol,
        key: String,
        _ body: [UInt8],
        while retried: HTTPResponse.Status
    ) async throws -> TestResponse {
        try await LiveCall.retrying(while: retried, within: .seconds(30), every: .milliseconds(200)) {
            let response = try await Self.post(client, "/v1/logs", key: key, body: body)
            return (response.status, response)
        }.1
    }

    static func post(
        _ client: some TestClientProtocol,
        _ path: String,
        key: String?,
        contentType: String = "application/x-protobuf",
        encoding: String? = nil,
        body: [UInt8]
    ) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: contentType]
        if let key { headers[.authorization] = "Bearer \(key)" }
        if let encoding { headers[.contentEncoding] = encoding }
        return try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(bytes: body)) { $0 }
    }

    static func status(_ response: TestResponse) throws -> OTLPStatus {
        if response.headers[.contentType] == "application/json" {
            return try OTLPStatus(jsonUTF8Bytes: Array(buffer: response.body))
        }
        return try OTLPStatus(serializedBytes: Array(buffer: response.body))
    }

    static let nowNanos = UInt64(Date().timeIntervalSince1970) * 1_000_000_000

    @Test(
        "GenAI spans in protobuf: a trace event each, a tool call for the tool span, usage for the chat span; the same export again is all duplicates"
    )
    func genAITraces() async throws {
        let harness = try await IngestHarness()
        let feed = try await Feed(harness)
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let body: [UInt8] = try OTLPPayloads.genAITraces(start: Self.nowNanos).serializedBytes()
            let response = try await Self.post(client, "/v1/traces", key: key, body: body)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/x-protobuf")
            #expect(try OTLPExportTraceResponse(serializedBytes: Array(buffer: response.body)).hasPartialSuccess == false)

            let frames = try await feed.frames(5)
            #expect(frames.map { $0["type"] as? String } == ["traceEvent", "traceEvent", "usage", "traceEvent", "toolCall"])
            #expect(frames.allSatisfy { $0["swarmId"] as? String == "checkout" && $0["agentId"] as? String == "fixer-1" })
            #expect(frames[0]["traceId"] as? String == OTLPPayloads.traceHex)
            #expect(frames[0]["spanId"] as? String == OTLPPayloads.spanHex(1))
            #expect(frames[1]["parentSpanId"] as? String == OTLPPayloads.spanHex(1))
            #expect(frames[1]["durationMs"] as? Double == 250)
            #expect(frames[2]["model"] as? String == "claude-sonnet-4")
            #expect(frames[2]["inputTokens"] as? Int == 1200)
            #expect(frames[2]["outputTokens"] as? Int == 340)
            #expect(frames[3]["status"] as? String == "error")
            #expect(frames[3]["severity"] as? String == "error")
            #expect(frames[4]["tool"] as? String == "bash")
            #expect(frames[4]["ok"] as? Bool == false)
            #expect(frames[4]["error"] as? String == "exit status 2")
            #expect((frames[4]["attrs"] as? Frame)?["callId"] as? String == "call-9")

            let again = try await Self.post(client, "/v1/traces", key: key, body: body)
            #expect(again.status == .ok)
            #expect(try OTLPExportTraceResponse(serializedBytes: Array(buffer: again.body)).hasPartialSuccess == false)
            #expect(try await Self.rows(harness) == 5)
        }
        await feed.nats.drain()
    }

    @Test("OTLP JSON, gzipped and chunked, over a real socket: ids are hex, unknown fields ignored, the answer is JSON")
    func jsonGzipChunked() async throws {
        let harness = try await IngestHarness()
        let feed = try await Feed(harness)
        let json = #"""
            {"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"json-agent"}},
              {"key":"service.instance.id","value":{"stringValue":"json-1"}}]},
             "scopeSpans":[{"scope":{"name":"sdk"},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c",
              "spanId":"eee19b7ec3c1b174","parentSpanId":"eee19b7ec3c1b173","name":"execute_tool grep","kind":1,
              "startTimeUnixNano":"1763780000000000000","endTimeUnixNano":"1763780000120000000",
              "attributes":[{"key":"gen_ai.tool.name","value":{"stringValue":"grep"}},{"key":"n","value":{"intValue":"7"}}],
              "status":{"code":1},"aFieldFromTheFuture":{"x":1}}]}]}]}
            """#
        let compressed = try OTLPPayloads.gzip(Array(json.utf8))
        try await harness.application().test(.live) { client in
            let key = try await harness.createKey(client)
            let port = try #require(client.port)
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/traces")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(key)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "Content-Encoding", value: "gzip")
            let half = compressed.count / 2
            let chunks = AsyncStream<ByteBuffer> { continuation in
                continuation.yield(ByteBuffer(bytes: compressed[..<half]))
                continuation.yield(ByteBuffer(bytes: compressed[half...]))
                continuation.finish()
            }
            request.body = .stream(chunks, length: .unknown)
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            let answer = try await response.body.collect(upTo: 1 << 20)
            #expect(response.status == .ok)
            #expect(response.headers.first(name: "Content-Type") == "application/json")
            #expect(try OTLPExportTraceResponse(jsonUTF8Bytes: Array(buffer: answer)).hasPartialSuccess == false)

            let frames = try await feed.frames(2)
            #expect(frames.map { $0["type"] as? String } == ["traceEvent", "toolCall"])
            #expect(frames[0]["traceId"] as? String == "5b8efff798038103d269b633813fc60c")
            #expect(frames[0]["spanId"] as? String == "eee19b7ec3c1b174")
            #expect(frames[0]["parentSpanId"] as? String == "eee19b7ec3c1b173")
            #expect(frames[0]["ts"] as? Int == 1_763_780_000_000)
            #expect(frames[0]["agentId"] as? String == "json-1")
            #expect((frames[0]["attrs"] as? Frame)?["n"] as? Int == 7)
            #expect(frames[1]["tool"] as? String == "grep")
            #expect(frames[1]["ok"] as? Bool == true)
            #expect(frames[1]["latencyMs"] as? Double == 120)
        }
        await feed.nats.drain()
    }

    @Test("OTLP JSON ids in upper-case hex are read as hex; a base64 id (not OTLP, but seen) is read as base64")
    func jsonIdentifierForms() async throws {
        let harness = try await IngestHarness()
        let feed = try await Feed(harness)
        @Sendable func export(trace: String, span: String) -> [UInt8] {
            Array(
                #"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"\#(trace)","spanId":"\#(span)","name":"s","startTimeUnixNano":"1763780000000000000"}]}]}]}"#
                    .utf8
            )
        }
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let upper = try await Self.post(
                client,
                "/v1/traces",
                key: key,
                contentType: "application/json",
                body: export(trace: "5B8EFFF798038103D269B633813FC60C", span: "EEE19B7EC3C1B174")
            )
            #expect(upper.status == .ok)
            let base64 = try await Self.post(
                client,
                "/v1/traces",
                key: key,
                contentType: "application/json",
                body: export(trace: "AQIDBAUGBwgJCgsMDQ4PEA==", span: "oAAAAAAAAAE=")
            )
            #expect(base64.status == .ok)
            let frames = try await feed.frames(2)
            #expect(frames[0]["traceId"] as? String == "5b8efff798038103d269b633813fc60c")
            #expect(frames[0]["spanId"] as? String == "eee19b7ec3c1b174")
            #expect(frames[1]["traceId"] as? String == OTLPPayloads.traceHex)
            #expect(frames[1]["spanId"] as? String == OTLPPayloads.spanHex(1))
        }
        await feed.nats.drain()
    }

    @Test("Claude Code and Codex events: tool results, token use, cost and errors appear; stream chatter does not")
    func agentLogs() async throws {
        let harness = try await IngestHarness()
        let feed = try await Feed(harness)
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let claude = try await Self.post(
                client,
                "/v1/logs",
                key: key,
                body: try OTLPPayloads.claudeCodeLogs(nanos: Self.nowNanos).serializedBytes()
            )
            #expect(claude.status == .ok)
            let codex = try await Self.post(
                client,
                "/v1/logs",
                key: key,
                contentType: "application/json; charset=utf-8",
                body: try OTLPPayloads.codexLogs(nanos: Self.nowNanos).jsonUTF8Bytes()
            )
            #expect(codex.status == .ok)
            #expect(codex.headers[.contentType] == "application/json")

            let frames = try await feed.frames(6)
            #expect(frames.map { $0["type"] as? String } == ["log", "toolCall", "usage", "log", "toolCall", "usage"])
            #expect(frames[..<4].allSatisfy { $0["swarmId"] as? String == "claude-code" && $0["agentId"] as? String == "sess-7f3a" })
            #expect(frames[0]["message"] as? String == "claude_code.user_prompt")
            #expect(frames[1]["tool"] as? String == "Bash")
            #expect(frames[1]["ok"] as? Bool == false)
            #expect(frames[1]["latencyMs"] as? Double == 812)
            #expect(frames[1]["error"] as? String == "Exit code 1")
            #expect(frames[2]["model"] as? String == "claude-sonnet-4-5")
            #expect(frames[2]["inputTokens"] as? Int == 1500)
            #expect(frames[2]["outputTokens"] as? Int == 220)
            #expect(frames[2]["costUsd"] as? Double == 0.0123)
            #expect(frames[3]["severity"] as? String == "error")
            #expect(frames[3]["message"] as? String == "API error 529: overloaded_error")
            #expect(frames[4...].allSatisfy { $0["swarmId"] as? String == "codex_cli_rs" && $0["agentId"] as? String == "conv-19" })
            #expect(frames[4]["tool"] as? String == "shell")
            #expect(frames[4]["ok"] as? Bool == true)
            #expect(frames[5]["inputTokens"] as? Int == 3000)
            #expect(frames[5]["outputTokens"] as? Int == 410)
            #expect(frames[5]["model"] as? String == "gpt-5-codex")
            #expect(try await Self.rows(harness) == 6)
        }
        await feed.nats.drain()
    }

    @Test("metrics: sums and gauges by value, histograms by sum with their count; temporality kept")
    func metrics() async throws {
        let harness = try await IngestHarness()
        let feed = try await Feed(harness)
        var tokens = OTLPMetric()
        tokens.name = "claude_code.token.usage"
        tokens.unit = "tokens"
        var input = OTLPNumberDataPoint()
        input.timeUnixNano = Self.nowNanos
        input.asInt = 1500
        input.attributes = [.init("type", "input"), .init("model", "claude-sonnet-4-5"), .init("session.id", "sess-1")]
        tokens.sum.dataPoints = [input]
        tokens.sum.aggregationTemporality = .delta
        tokens.sum.isMonotonic = true
        var cost = OTLPMetric()
        cost.name = "claude_code.cost.usage"
        cost.unit = "USD"
        var dollars = OTLPNumberDataPoint()
        dollars.timeUnixNano = Self.nowNanos
        dollars.asDouble = 0.0123
        dollars.attributes = [.init("session.id", "sess-1")]
        cost.sum.dataPoints = [dollars]
        cost.sum.aggregationTemporality = .delta
        var duration = OTLPMetric()
        duration.name = "gen_ai.client.operation.duration"
        duration.unit = "s"
        var histogram = Opentelemetry_Proto_Metrics_V1_HistogramDataPoint()
        histogram.timeUnixNano = Self.nowNanos
        histogram.count = 4
        histogram.sum = 6.5
        histogram.attributes = [.init("session.id", "sess-1")]
        duration.histogram.dataPoints = [histogram]
        var empty = OTLPMetric()
        empty.name = "broken"
        empty.gauge.dataPoints = [OTLPNumberDataPoint()]

        var scope = Opentelemetry_Proto_Metrics_V1_ScopeMetrics()
        scope.metrics = [tokens, cost, duration, empty]
        var resourceMetrics = Opentelemetry_Proto_Metrics_V1_ResourceMetrics()
        resourceMetrics.resource = OTLPPayloads.resource([.init("service.name", "claude-code")])
        resourceMetrics.scopeMetrics = [scope]
        var export = OTLPExportMetricsRequest()
        export.resourceMetrics = [resourceMetrics]
        let body: [UInt8] = try export.serializedBytes()

        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let response = try await Self.post(client, "/v1/metrics", key: key, body: body)
            #expect(response.status == .ok)
            let answer = try OTLPExportMetricsResponse(serializedBytes: Array(buffer: response.body))
            #expect(answer.partialSuccess.rejectedDataPoints == 1)
            #expect(answer.partialSuccess.errorMessage.contains("broken"))

            let frames = try await feed.frames(3)
            #expect(
                frames.map { $0["name"] as? String } == ["claude_code.token.usage", "claude_code.cost.usage", "gen_ai.client.operation.duration"]
            )
            #expect(frames.allSatisfy { $0["type"] as? String == "metric" && $0["agentId"] as? String == "sess-1" })
            #expect(frames[0]["value"] as? Double == 1500)
            #expect(frames[0]["unit"] as? String == "tokens")
            let attrs = try #require(frames[0]["attrs"] as? Frame)
            #expect(attrs["type"] as? String == "input")
            #expect(attrs["temporality"] as? String == "delta")
            #expect(frames[1]["value"] as? Double == 0.0123)
            #expect(frames[2]["value"] as? Double == 6.5)
            #expect((frames[2]["attrs"] as? Frame)?["count"] as? Int == 4)
        }
        await feed.nats.drain()
    }

    @Test("partial success: bad spans and oversized records are counted and explained; the rest is stored")
    func partialSuccess() async throws {
        let harness = try await IngestHarness(overrides: ["INGEST_MAX_EVENT_BYTES": "1024"])
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            var traces = OTLPPayloads.genAITraces(start: Self.nowNanos)
            traces.resourceSpans[0].scopeSpans[0].spans[1].traceID = Data([1, 2, 3, 4])
            traces.resourceSpans[0].scopeSpans[0].spans[2].spanID = Data(count: 8)
            let response = try await Self.post(client, "/v1/traces", key: key, body: try traces.serializedBytes())
            #expect(response.status == .ok)
            let answer = try OTLPExportTraceResponse(serializedBytes: Array(buffer: response.body))
            #expect(answer.partialSuccess.rejectedSpans == 2)
            #expect(answer.partialSuccess.errorMessage.contains("16-byte traceId"))
            #expect(try await Self.rows(harness) == 1)

            var logs = OTLPPayloads.claudeCodeLogs(nanos: Self.nowNanos)
            logs.resourceLogs[0].scopeLogs[0].logRecords[0].body.stringValue = String(repeating: "x", count: 3000)
            let logResponse = try await Self.post(client, "/v1/logs", key: key, contentType: "application/json", body: try logs.jsonUTF8Bytes())
            #expect(logResponse.status == .ok)
            let logAnswer = try OTLPExportLogsResponse(jsonUTF8Bytes: Array(buffer: logResponse.body))
            #expect(logAnswer.partialSuccess.rejectedLogRecords == 1)
            #expect(logAnswer.partialSuccess.errorMessage.contains("1024"))
            #expect(try await Self.rows(harness) == 4)

            // A span whose derived usage is invalid is stored (its trace event): a warning, not a rejection.
            var negative = OTLPPayloads.genAITraces(start: Self.nowNanos + 1)
            negative.resourceSpans[0].scopeSpans[0].spans = [negative.resourceSpans[0].scopeSpans[0].spans[1]]
            negative.resourceSpans[0].scopeSpans[0].spans[0].spanID = OTLPPayloads.spanID(42)
            negative.resourceSpans[0].scopeSpans[0].spans[0].attributes.append(.init("gen_ai.usage.input_tokens", Int64(-5)))
            let warned = try await Self.post(client, "/v1/traces", key: key, body: try negative.serializedBytes())
            let warning = try OTLPExportTraceResponse(serializedBytes: Array(buffer: warned.body))
            #expect(warning.partialSuccess.rejectedSpans == 0)
            #expect(warning.partialSuccess.errorMessage.contains("stored without a derived event"))
            #expect(try await Self.rows(harness) == 5)
        }
    }

    @Test("bad requests: 400 with google.rpc.Status, 401, 413, 415, in the request's encoding; the service stays healthy")
    func badRequests() async throws {
        let harness = try await IngestHarness(overrides: ["INGEST_MAX_BODY_BYTES": "65536", "INGEST_MAX_BATCH_EVENTS": "4"])
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let valid: [UInt8] = try OTLPPayloads.genAITraces(start: Self.nowNanos).serializedBytes()
            let gzipped = try OTLPPayloads.gzip(valid)
            var five = OTLPPayloads.genAITraces(start: Self.nowNanos)
            for n in UInt8(4)...5 {
                var span = five.resourceSpans[0].scopeSpans[0].spans[0]
                span.spanID = OTLPPayloads.spanID(n)
                five.resourceSpans[0].scopeSpans[0].spans.append(span)
            }
            var random = SystemRandomNumberGenerator()
            let garbage = (0..<60_000).map { _ in UInt8.random(in: 0...255, using: &random) }
            let cases: [(String, String?, String?, [UInt8], HTTPResponse.Status, Int32)] = [
                ("application/x-protobuf", key, nil, garbage, .badRequest, 3),
                ("application/json", key, nil, Array(#"{"resourceSpans": [{"#.utf8), .badRequest, 3),
                ("application/json", key, nil, Array(#"{"resourceSpans": "many"}"#.utf8), .badRequest, 3),
                ("application/json", key, "gzip", Array("not gzip at all".utf8), .badRequest, 3),
                ("application/x-protobuf", key, "gzip", Array(gzipped.dropLast(12)), .badRequest, 3),
                ("application/x-protobuf", key, nil, try five.serializedBytes(), .contentTooLarge, 3),
                ("application/x-protobuf", nil, nil, [], .unauthorized, 16),
                ("application/x-protobuf", "sdi_0123456789abcdef_" + String(repeating: "0", count: 64), nil, [], .unauthorized, 16),
                ("text/plain", key, nil, Array("hello".utf8), .unsupportedMediaType, 3),
                ("application/x-protobuf", key, "br", [1, 2, 3], .unsupportedMediaType, 3),
                ("application/x-protobuf", key, nil, [UInt8](repeating: 0x0A, count: 100_000), .contentTooLarge, 3),
                ("application/x-protobuf", key, "gzip", try OTLPPayloads.gzip([UInt8](repeating: 0, count: 1 << 20)), .contentTooLarge, 3),
                ("application/x-protobuf", key, nil, [UInt8](repeating: 0xFF, count: 10 << 20), .contentTooLarge, 3),
            ]
            for (contentType, key, encoding, body, status, code) in cases {
                let response = try await Self.post(client, "/v1/traces", key: key, contentType: contentType, encoding: encoding, body: body)
                #expect(response.status == status, "\(contentType) \(encoding ?? "") → \(response.status)")
                if contentType == "application/x-protobuf" || contentType == "application/json" {
                    #expect(response.headers[.contentType] == contentType)
                }
                let rpc = try Self.status(response)
                #expect(rpc.code == code)
                #expect(!rpc.message.isEmpty)
                if status == .unauthorized {
                    #expect(response.headers[.wwwAuthenticate] != nil)
                }
            }
            let whole = try await Self.post(client, "/v1/traces", key: key, encoding: "gzip", body: gzipped)
            #expect(whole.status == .ok)
            try await client.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
            let fine = try await Self.post(client, "/v1/traces", key: key, body: try OTLPPayloads.genAITraces(start: Self.nowNanos).serializedBytes())
            #expect(fine.status == .ok)
        }
    }

    @Test("overloaded: 429 when the queue is full, 503 when Postgres does not answer in time, both with Retry-After")
    func overloaded() async throws {
        let harness = try await IngestHarness(overrides: [
            "INGEST_MAX_BATCH_EVENTS": "5", "INGEST_MAX_QUEUED_EVENTS": "5", "INGEST_MAX_QUEUED_TENANT_SHARE": "1",
            "INGEST_COMMIT_TIMEOUT_SECONDS": "6",
        ])
        @Sendable func logs(_ count: Int, from: UInt64) throws -> [UInt8] {
            var request = OTLPPayloads.claudeCodeLogs(nanos: Self.nowNanos)
            request.resourceLogs[0].scopeLogs[0].logRecords = (0..<count).map {
                OTLPPayloads.record("line \(from + UInt64($0))", eventName: nil, nanos: Self.nowNanos + from + UInt64($0), [])
            }
            return try request.serializedBytes()
        }
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            // One event first, so that the tenant's rate is read (its lease filled) before the
            // lock is taken: the requests below are then admitted at once, however loaded the
            // host (a refill that outlived the commit timeout would answer 503 before the queue).
            let warm = try await Self.postLogs(client, key: key, try logs(1, from: 1000), while: .serviceUnavailable)
            #expect(warm.status == .ok)
            try await harness.withDatabase { database in
                // Hold the tenant's row lock, as a stuck transaction would.
                try await database.withTransaction(logger: Logger(label: "test")) { connection in
                    let logger = Logger(label: "test")
                    try await connection.query("SELECT 1 FROM tenants WHERE tenant_id = \(harness.tenant) FOR UPDATE", logger: logger)
                    var pid = 0
                    for try await value in try await connection.query("SELECT pg_backend_pid()", logger: logger).decode(Int.self) { pid = value }
                    async let first = Self.post(client, "/v1/logs", key: key, body: try logs(5, from: 0))
                    let waiting = try await eventually {
                        let rows = try await database.query("SELECT count(*)::int FROM pg_stat_activity WHERE \(pid) = ANY(pg_blocking_pids(pid))")
                        for try await count in rows.decode(Int.self) { return count > 0 }
                        return false
                    }
                    #expect(waiting)
                    let second = try await Self.post(client, "/v1/logs", key: key, body: try logs(1, from: 100))
                    #expect(second.status == .tooManyRequests)
                    #expect(second.headers[.retryAfter] == "1")
                    #expect(try Self.status(second).code == 8)
                    let blocked = try await first
                    #expect(blocked.status == .serviceUnavailable)
                    #expect(blocked.headers[.retryAfter] == "1")
                    #expect(try Self.status(blocked).code == 14)
                }
            }
            // The abandoned append's events count against the queue until it has ended (its
            // lock wait ends on the server's side after the same 6 s): 429 until then.
            let after = try await Self.postLogs(client, key: key, try logs(5, from: 0), while: .tooManyRequests)
            #expect(after.status == .ok)
            #expect(try await Self.rows(harness) == 6)
        }
    }
}

import Foundation
import OTLP

/// Real OTLP payloads, shaped like what Claude Code, Codex and GenAI-instrumented SDKs send.
enum OTLPPayloads {
    static let traceID = Data((1...16).map { UInt8($0) })
    static let traceHex = "0102030405060708090a0b0c0d0e0f10"

    static func spanID(_ n: UInt8) -> Data { Data([0xA0, 0, 0, 0, 0, 0, 0, n]) }
    static func spanHex(_ n: UInt8) -> String { String(format: "a0000000000000%02x", n) }

    static func resource(_ attributes: [OTLPKeyValue]) -> OTLPResource {
        var resource = OTLPResource()
        resource.attributes = attributes
        return resource
    }

    /// Three GenAI spans: an agent invocation (with summed usage, not counted again), a chat
    /// with usage, and a failed tool execution.
    static func genAITraces(start: UInt64) -> OTLPExportTraceRequest {
        func span(_ n: UInt8, parent: UInt8?, name: String, attributes: [OTLPKeyValue], error: String? = nil) -> OTLPSpan {
            var span = OTLPSpan()
            span.traceID = Self.traceID
            span.spanID = Self.spanID(n)
            if let parent { span.parentSpanID = Self.spanID(parent) }
            span.name = name
            span.kind = .internal
            span.startTimeUnixNano = start + UInt64(n) * 1_000_000
            span.endTimeUnixNano = start + UInt64(n) * 1_000_000 + 250_000_000
            span.attributes = attributes
            if let error {
                span.status.code = .error
                span.status.message = error
            }
            return span
        }
        var scope = Opentelemetry_Proto_Trace_V1_ScopeSpans()
        scope.spans = [
            span(
                1,
                parent: nil,
                name: "invoke_agent fixer",
                attributes: [
                    .init("gen_ai.operation.name", "invoke_agent"), .init("gen_ai.usage.input_tokens", Int64(999)),
                ]
            ),
            span(
                2,
                parent: 1,
                name: "chat claude-sonnet-4",
                attributes: [
                    .init("gen_ai.operation.name", "chat"), .init("gen_ai.request.model", "claude-sonnet-4"),
                    .init("gen_ai.usage.input_tokens", Int64(1200)), .init("gen_ai.usage.output_tokens", Int64(340)),
                ]
            ),
            span(
                3,
                parent: 1,
                name: "execute_tool bash",
                attributes: [
                    .init("gen_ai.operation.name", "execute_tool"), .init("gen_ai.tool.name", "bash"), .init("gen_ai.tool.call.id", "call-9"),
                ],
                error: "exit status 2"
            ),
        ]
        var resourceSpans = Opentelemetry_Proto_Trace_V1_ResourceSpans()
        resourceSpans.resource = Self.resource([
            .init("service.name", "fixer-sdk"), .init("swarmdeck.swarm.id", "checkout"), .init("swarmdeck.agent.id", "fixer-1"),
        ])
        resourceSpans.scopeSpans = [scope]
        var request = OTLPExportTraceRequest()
        request.resourceSpans = [resourceSpans]
        return request
    }

    static func record(
        _ body: String,
        eventName: String?,
        nanos: UInt64,
        _ attributes: [OTLPKeyValue],
        severity: Opentelemetry_Proto_Logs_V1_SeverityNumber = .info
    ) -> OTLPLogRecord {
        var record = OTLPLogRecord()
        record.timeUnixNano = nanos
        record.observedTimeUnixNano = nanos
        record.severityNumber = severity
        record.body.stringValue = body
        record.attributes = (eventName.map { [OTLPKeyValue("event.name", $0)] } ?? []) + attributes
        return record
    }

    /// Claude Code's events as its exporter sends them: body `claude_code.<name>`, attribute
    /// `event.name` = `<name>`, numbers as strings, `session.id` on each record.
    static func claudeCodeLogs(nanos: UInt64) -> OTLPExportLogsRequest {
        let session = OTLPKeyValue("session.id", "sess-7f3a")
        var scope = Opentelemetry_Proto_Logs_V1_ScopeLogs()
        scope.scope.name = "com.anthropic.claude_code.events"
        scope.logRecords = [
            Self.record("claude_code.user_prompt", eventName: "user_prompt", nanos: nanos, [session, .init("prompt_length", "42")]),
            Self.record(
                "claude_code.tool_result",
                eventName: "tool_result",
                nanos: nanos + 1,
                [
                    session, .init("tool_name", "Bash"), .init("success", "false"), .init("duration_ms", "812"), .init("error", "Exit code 1"),
                ]
            ),
            Self.record(
                "claude_code.api_request",
                eventName: "api_request",
                nanos: nanos + 2,
                [
                    session, .init("model", "claude-sonnet-4-5"), .init("cost_usd", "0.0123"), .init("duration_ms", "2100"),
                    .init("input_tokens", "1500"), .init("output_tokens", "220"), .init("cache_read_tokens", "9000"),
                ]
            ),
            Self.record(
                "claude_code.api_error",
                eventName: "api_error",
                nanos: nanos + 3,
                [
                    session, .init("model", "claude-sonnet-4-5"), .init("error", "overloaded_error"), .init("status_code", Int64(529)),
                ]
            ),
        ]
        var resourceLogs = Opentelemetry_Proto_Logs_V1_ResourceLogs()
        resourceLogs.resource = Self.resource([.init("service.name", "claude-code"), .init("service.version", "2.0.14")])
        resourceLogs.scopeLogs = [scope]
        var request = OTLPExportLogsRequest()
        request.resourceLogs = [resourceLogs]
        return request
    }

    /// Codex's events: `event.name` = `codex.<name>`, `conversation.id` on each record.
    static func codexLogs(nanos: UInt64) -> OTLPExportLogsRequest {
        let conversation = OTLPKeyValue("conversation.id", "conv-19")
        let model = OTLPKeyValue("model", "gpt-5-codex")
        var scope = Opentelemetry_Proto_Logs_V1_ScopeLogs()
        scope.logRecords = [
            Self.record(
                "",
                eventName: "codex.tool_result",
                nanos: nanos,
                [
                    conversation, model, .init("tool_name", "shell"), .init("call_id", "c1"), .init("duration_ms", "35"), .init("success", "true"),
                    .init("output", "ok"),
                ]
            ),
            Self.record("", eventName: "codex.sse_event", nanos: nanos + 1, [conversation, model, .init("event.kind", "response.output_item.done")]),
            Self.record(
                "",
                eventName: "codex.sse_event",
                nanos: nanos + 2,
                [
                    conversation, model, .init("event.kind", "response.completed"), .init("input_token_count", "3000"),
                    .init("output_token_count", "410"), .init("cached_token_count", Int64(2048)),
                ]
            ),
        ]
        var resourceLogs = Opentelemetry_Proto_Logs_V1_ResourceLogs()
        resourceLogs.resource = Self.resource([.init("service.name", "codex_cli_rs")])
        resourceLogs.scopeLogs = [scope]
        var request = OTLPExportLogsRequest()
        request.resourceLogs = [resourceLogs]
        return request
    }

    static func gzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gzip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("body")
        try Data(bytes).write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-n", file.path]
        try process.run()
        process.waitUntilExit()
        return Array(try Data(contentsOf: directory.appendingPathComponent("body.gz")))
    }
}

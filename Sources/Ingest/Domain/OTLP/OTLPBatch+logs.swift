import Contracts
import EventLog
import OTLP

extension OTLPBatch {
    /// Maps every log record. Agent events are read by their `event.name` attribute:
    ///
    /// | event | becomes |
    /// | --- | --- |
    /// | Claude Code `tool_result`, Codex `codex.tool_result` | `tool_call` |
    /// | Claude Code `api_request` | `usage` (tokens, `cost_usd`) |
    /// | Codex `codex.sse_event` of kind `response.completed` with token counts | `usage` |
    /// | Claude Code `api_error`; Codex `codex.sse_event` / `codex.api_request` with an error | `log` at `error` |
    /// | Codex `codex.sse_event` otherwise (one per streamed chunk) | nothing |
    /// | anything else | `log` (body as message, severity from `severityNumber`) |
    mutating func add(_ request: OTLPExportLogsRequest) {
        for resourceLogs in request.resourceLogs {
            let resource = OTLPAttributes(resource: resourceLogs.resource.attributes)
            let resourceBytes: [UInt8] = (try? resourceLogs.resource.serializedBytes()) ?? []
            for scopeLogs in resourceLogs.scopeLogs {
                let scope = Array(scopeLogs.scope.name.utf8)
                for record in scopeLogs.logRecords {
                    let recordBytes: [UInt8] = (try? record.serializedBytes()) ?? []
                    self.add(
                        record,
                        attributes: resource.with(item: record.attributes),
                        msgID: OTLPBatch.messageID("log", resourceBytes, scope, recordBytes)
                    )
                }
            }
        }
    }

    private mutating func add(_ record: OTLPLogRecord, attributes: OTLPAttributes, msgID: String) {
        let item = self.beginItem()
        let ts = OTLPBatch.milliseconds(record.timeUnixNano) ?? OTLPBatch.milliseconds(record.observedTimeUnixNano)
        let body: String? = if case .stringValue(let text)? = record.body.value { text } else { nil }
        var name = attributes.string("event.name") ?? (record.eventName.isEmpty ? nil : record.eventName)
        if name == nil, let body, body.hasPrefix("claude_code.") || body.hasPrefix("codex.") { name = body }
        if let short = name, short.hasPrefix("claude_code.") { name = String(short.dropFirst("claude_code.".count)) }

        func event(_ kind: String) -> NativeEvent {
            var event = OTLPSource.event(kind, msgID: msgID, attributes: attributes, ts: ts)
            event.attrs = attributes.json
            return event
        }
        func errorLog(_ message: String) -> NativeEvent {
            var log = event("log")
            log.severity = "error"
            log.message = OTLPAttributes.cut(message, to: 2048)
            return log
        }

        switch name {
        case "tool_result", "codex.tool_result":
            var call = event("tool_call")
            call.tool = attributes.string("tool_name") ?? "unknown"
            let ok = attributes.bool("success") ?? true
            call.ok = ok
            call.latencyMs = attributes.double("duration_ms")
            if !ok {
                call.error = OTLPAttributes.cut(attributes.string("error", "error_type", "output") ?? "failed", to: 1024)
            }
            self.add(call, item: item)
        case "api_request":
            var usage = event("usage")
            usage.model = attributes.string("model")
            usage.inputTokens = attributes.integer("input_tokens") ?? 0
            usage.outputTokens = attributes.integer("output_tokens") ?? 0
            usage.costUsd = attributes.double("cost_usd")
            self.add(usage, item: item)
        case "api_error":
            let status = attributes.string("status_code").map { " \($0)" } ?? ""
            self.add(errorLog("API error\(status): \(attributes.string("error") ?? "unknown")"), item: item)
        case "codex.sse_event":
            let kind = attributes.string("event.kind") ?? ""
            if let failure = attributes.string("error.message") {
                self.add(errorLog("\(kind.isEmpty ? "stream" : kind): \(failure)"), item: item)
            } else if kind == "response.failed" {
                self.add(errorLog("response.failed"), item: item)
            } else if kind == "response.completed", attributes.value("input_token_count") != nil || attributes.value("output_token_count") != nil {
                var usage = event("usage")
                usage.model = attributes.string("model")
                usage.inputTokens = attributes.integer("input_token_count") ?? 0
                usage.outputTokens = attributes.integer("output_token_count") ?? 0
                self.add(usage, item: item)
            }
        case "codex.api_request" where attributes.string("error.message") != nil || (attributes.integer("http.response.status_code") ?? 0) >= 400:
            let status = attributes.string("http.response.status_code").map { " \($0)" } ?? ""
            self.add(errorLog("API error\(status): \(attributes.string("error.message") ?? "request failed")"), item: item)
        default:
            var log = event("log")
            if let body {
                log.message = OTLPAttributes.cut(body, to: 16_384)
            } else if record.hasBody, record.body.value != nil {
                var writer = JSONWriter(capacity: 256)
                writer.value(OTLPAttributes.json(record.body, depth: 0))
                log.message = String(decoding: writer.bytes, as: UTF8.self)
            } else {
                log.message = name ?? ""
            }
            log.level = Self.severity(record)
            self.add(log, item: item)
        }
    }

    /// Our severity name for a record: from `severityNumber`, else its `severityText`.
    static func severity(_ record: OTLPLogRecord) -> String? {
        switch record.severityNumber.rawValue {
        case 1...4: "trace"
        case 5...8: "debug"
        case 9...12: "info"
        case 13...16: "warn"
        case 17...20: "error"
        case 21...24: "fatal"
        default:
            BusSeverity(name: record.severityText.lowercased()).map(\.name)
        }
    }
}

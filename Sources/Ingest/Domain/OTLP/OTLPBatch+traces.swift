import OTLP

extension OTLPBatch {
    /// GenAI operations that sum their children's usage; their token counts are not counted again.
    private static let aggregateOperations: Set<String> = ["invoke_agent", "create_agent", "invoke_workflow"]

    /// Maps every span: each is a `trace` event; one that runs a tool (`gen_ai.tool.name`, or
    /// `gen_ai.operation.name` = `execute_tool`) is also a `tool_call`; one that reports
    /// `gen_ai.usage.*` tokens (and is not an agent span summing its children) is also a `usage`.
    mutating func add(_ request: OTLPExportTraceRequest) {
        for resourceSpans in request.resourceSpans {
            let resource = OTLPAttributes(resource: resourceSpans.resource.attributes)
            for scopeSpans in resourceSpans.scopeSpans {
                for span in scopeSpans.spans {
                    self.add(span, attributes: resource.with(item: span.attributes))
                }
            }
        }
    }

    private mutating func add(_ span: OTLPSpan, attributes: OTLPAttributes) {
        let item = self.beginItem()
        guard let traceID = self.identifier(span.traceID, bytes: 16), let spanID = self.identifier(span.spanID, bytes: 8) else {
            self.reject(item, "span '\(OTLPAttributes.cut(span.name, to: 64))' needs a 16-byte traceId and an 8-byte spanId, not all zero")
            return
        }
        let msgID = "otlp.span.\(traceID).\(spanID)"
        let start = OTLPBatch.milliseconds(span.startTimeUnixNano)
        let durationMs: Double? =
            span.startTimeUnixNano > 0 && span.endTimeUnixNano >= span.startTimeUnixNano
            ? Double(span.endTimeUnixNano - span.startTimeUnixNano) / 1_000_000 : nil
        let failed = span.status.code == .error

        var trace = OTLPSource.event("trace", msgID: msgID, attributes: attributes, ts: start)
        trace.name = span.name
        trace.spanId = spanID
        trace.traceId = traceID
        trace.parentSpanId = span.parentSpanID.isEmpty ? nil : self.identifier(span.parentSpanID, bytes: 8)
        trace.durationMs = durationMs
        trace.status =
            switch span.status.code {
            case .ok: "ok"
            case .error: "error"
            default: nil
            }
        trace.attrs = attributes.json
        self.add(trace, item: item)

        let operation = attributes.string("gen_ai.operation.name")
        if let tool = attributes.string("gen_ai.tool.name") ?? (operation == "execute_tool" ? span.name : nil) {
            var call = OTLPSource.event("tool_call", msgID: msgID + ".tool", attributes: attributes, ts: start)
            call.tool = tool
            call.ok = !failed
            call.latencyMs = durationMs
            if failed {
                call.error =
                    span.status.message.isEmpty ? attributes.string("error.type") ?? "error" : OTLPAttributes.cut(span.status.message, to: 1024)
            }
            call.attrs = .object([("spanId", .string(spanID))] + (attributes.string("gen_ai.tool.call.id").map { [("callId", .string($0))] } ?? []))
            self.add(call, item: item, primary: false)
        }

        let input = attributes.integer("gen_ai.usage.input_tokens")
        let output = attributes.integer("gen_ai.usage.output_tokens")
        if input != nil || output != nil, !Self.aggregateOperations.contains(operation ?? "") {
            var usage = OTLPSource.event("usage", msgID: msgID + ".usage", attributes: attributes, ts: start)
            usage.model = attributes.string("gen_ai.response.model", "gen_ai.request.model")
            usage.inputTokens = input ?? 0
            usage.outputTokens = output ?? 0
            var extra: [(String, JSONValue)] = [("spanId", .string(spanID))]
            for key in ["gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.reasoning.output_tokens"] {
                if let value = attributes.integer(key) { extra.append((key, .number(Double(value)))) }
            }
            usage.attrs = .object(extra)
            self.add(usage, item: item, primary: false)
        }
    }
}

import OTLP
import SwiftProtobuf
import Testing

@testable import TelemetryRelay

@Suite("The relay's stamp: every resource names the connector's agent, no item can name another")
struct RelayStampTests {
    let stamp = RelayStamp(swarm: "checkout", agent: "claude-1")

    static func logs(resource: [OTLPKeyValue], record: [OTLPKeyValue]) -> OTLPExportLogsRequest {
        var export = OTLPExportLogsRequest()
        var resourceLogs = Opentelemetry_Proto_Logs_V1_ResourceLogs()
        resourceLogs.resource.attributes = resource
        var scope = Opentelemetry_Proto_Logs_V1_ScopeLogs()
        var item = OTLPLogRecord()
        item.attributes = record
        item.body.stringValue = "claude_code.tool_result"
        scope.logRecords = [item, item]
        resourceLogs.scopeLogs = [scope]
        export.resourceLogs = [resourceLogs, resourceLogs]
        return export
    }

    static func value(_ attributes: [OTLPKeyValue], _ key: String) -> [String] {
        attributes.filter { $0.key == key }.map(\.value.stringValue)
    }

    @Test("logs: a claimed swarm and agent, on the resource or a record, give way to the connector's")
    func logs() throws {
        let claimed = [OTLPKeyValue("swarmdeck.swarm.id", "victims"), OTLPKeyValue("swarmdeck.agent.id", "their-agent")]
        var export = Self.logs(
            resource: claimed + [OTLPKeyValue("service.name", "claude-code")],
            record: claimed + [OTLPKeyValue("session.id", "s1")]
        )
        self.stamp.stamp(&export)
        for resource in export.resourceLogs {
            #expect(Self.value(resource.resource.attributes, "swarmdeck.swarm.id") == ["checkout"])
            #expect(Self.value(resource.resource.attributes, "swarmdeck.agent.id") == ["claude-1"])
            #expect(Self.value(resource.resource.attributes, "service.name") == ["claude-code"])
            for record in resource.scopeLogs.flatMap(\.logRecords) {
                #expect(record.attributes.map(\.key) == ["session.id"])
            }
        }
    }

    @Test("the bytes path: protobuf and OTLP JSON in, stamped, in the same encoding or protobuf when asked")
    func encoded() throws {
        let export = Self.logs(resource: [], record: [OTLPKeyValue("swarmdeck.agent.id", "other")])
        for (bytes, json) in [(try export.serializedBytes() as [UInt8], false), (try export.jsonUTF8Bytes() as [UInt8], true)] {
            let stamped = try OTLPExportLogsRequest(serializedBytes: try self.stamp.stamp(.logs, body: bytes, json: json, as: .protobuf))
            let same = try self.stamp.stamp(.logs, body: bytes, json: json)
            #expect((try? OTLPExportLogsRequest(jsonUTF8Bytes: same)) != nil || !json)
            #expect(stamped.resourceLogs.count == 2)
            #expect(Self.value(stamped.resourceLogs[0].resource.attributes, "swarmdeck.agent.id") == ["claude-1"])
            #expect(stamped.resourceLogs[0].scopeLogs[0].logRecords[0].attributes.isEmpty)
        }
        #expect(throws: (any Error).self) { try self.stamp.stamp(.logs, body: Array("{not json".utf8), json: true) }
        #expect(throws: (any Error).self) { try self.stamp.stamp(.traces, body: [0xFF, 0xFF, 0xFF], json: false) }
    }

    @Test("traces and every kind of metric point are stripped too")
    func tracesAndMetrics() throws {
        let claim = OTLPKeyValue("swarmdeck.agent.id", "other")
        var traces = OTLPExportTraceRequest()
        var resourceSpans = Opentelemetry_Proto_Trace_V1_ResourceSpans()
        var scopeSpans = Opentelemetry_Proto_Trace_V1_ScopeSpans()
        var span = OTLPSpan()
        span.attributes = [claim, OTLPKeyValue("gen_ai.tool.name", "Bash")]
        scopeSpans.spans = [span]
        resourceSpans.scopeSpans = [scopeSpans]
        traces.resourceSpans = [resourceSpans]
        self.stamp.stamp(&traces)
        #expect(traces.resourceSpans[0].scopeSpans[0].spans[0].attributes.map(\.key) == ["gen_ai.tool.name"])
        #expect(Self.value(traces.resourceSpans[0].resource.attributes, "swarmdeck.agent.id") == ["claude-1"])

        var point = OTLPNumberDataPoint()
        point.attributes = [claim]
        var gauge = Opentelemetry_Proto_Metrics_V1_Gauge()
        gauge.dataPoints = [point]
        var sum = Opentelemetry_Proto_Metrics_V1_Sum()
        sum.dataPoints = [point]
        var histogramPoint = Opentelemetry_Proto_Metrics_V1_HistogramDataPoint()
        histogramPoint.attributes = [claim]
        var histogram = Opentelemetry_Proto_Metrics_V1_Histogram()
        histogram.dataPoints = [histogramPoint]
        var metrics = OTLPExportMetricsRequest()
        var resourceMetrics = Opentelemetry_Proto_Metrics_V1_ResourceMetrics()
        var scopeMetrics = Opentelemetry_Proto_Metrics_V1_ScopeMetrics()
        scopeMetrics.metrics = [gauge, sum, histogram].enumerated().map { index, data in
            var metric = OTLPMetric()
            metric.name = "m\(index)"
            switch data {
            case let gauge as Opentelemetry_Proto_Metrics_V1_Gauge: metric.gauge = gauge
            case let sum as Opentelemetry_Proto_Metrics_V1_Sum: metric.sum = sum
            case let histogram as Opentelemetry_Proto_Metrics_V1_Histogram: metric.histogram = histogram
            default: break
            }
            return metric
        }
        resourceMetrics.scopeMetrics = [scopeMetrics]
        metrics.resourceMetrics = [resourceMetrics]
        self.stamp.stamp(&metrics)
        let stamped = metrics.resourceMetrics[0].scopeMetrics[0].metrics
        #expect(stamped[0].gauge.dataPoints[0].attributes.isEmpty)
        #expect(stamped[1].sum.dataPoints[0].attributes.isEmpty)
        #expect(stamped[2].histogram.dataPoints[0].attributes.isEmpty)
    }
}

@Suite("The relay's queue: bounded in bytes, joined per signal, oldest first")
struct RelayQueueTests {
    static func entry(_ signal: RelaySignal, _ size: Int, items: Int = 1) -> RelayQueue.Entry {
        RelayQueue.Entry(signal: signal, bytes: Array(repeating: UInt8(size & 0xFF), count: size), items: items)
    }

    @Test("a push past the byte bound is refused; a batch joins neighbours of one signal within its bounds")
    func bounds() {
        var queue = RelayQueue(maxBytes: 100)
        #expect(queue.push(Self.entry(.logs, 30, items: 3)) == true)
        #expect(queue.push(Self.entry(.logs, 30, items: 3)) == true)
        #expect(queue.push(Self.entry(.metrics, 30, items: 5)) == true)
        #expect(queue.push(Self.entry(.logs, 11)) == false)
        #expect(queue.push(Self.entry(.logs, 10)) == true)
        #expect(queue.bytes == 100 && queue.items == 12)

        let first = queue.peek(maxBytes: 1000, maxItems: 1000)
        #expect(first?.signal == .logs && first?.count == 2 && first?.items == 6 && first?.bytes.count == 60)
        // Bounded by items: only the first.
        #expect(queue.peek(maxBytes: 1000, maxItems: 4)?.count == 1)
        // Bounded by bytes, but the first goes whatever its size.
        #expect(queue.peek(maxBytes: 10, maxItems: 1000)?.count == 1)
        queue.remove(first!)
        #expect(queue.peek(maxBytes: 1000, maxItems: 1000)?.signal == .metrics)
        queue.remove(queue.peek(maxBytes: 1000, maxItems: 1000)!)
        #expect(queue.peek(maxBytes: 1000, maxItems: 1000)?.items == 1)
        let left = queue.removeAll()
        #expect(left == 1)
        #expect(queue.isEmpty && queue.bytes == 0)
    }

    @Test("a long run of pushes and removes keeps its counts")
    func churn() {
        var queue = RelayQueue(maxBytes: 10_000)
        var pushed = 0
        var removed = 0
        for round in 0..<2000 {
            if queue.push(Self.entry(round % 3 == 0 ? .traces : .logs, 7, items: 2)) { pushed += 2 }
            if round % 2 == 1, let batch = queue.peek(maxBytes: 50, maxItems: 8) {
                queue.remove(batch)
                removed += batch.items
            }
        }
        #expect(queue.items == pushed - removed)
        #expect(queue.bytes == queue.count * 7)
    }
}

@Suite("The command's environment under the relay")
struct RelayEnvironmentTests {
    @Test("Claude Code's switch, the standard OTEL variables at the relay with its secret, the stamp percent-encoded")
    func variables() {
        let environment = RelayEnvironment(endpoint: "http://127.0.0.1:4318", secret: "abc", stamp: RelayStamp(swarm: "a b,c", agent: "x=y"))
        let values = Dictionary(
            uniqueKeysWithValues: environment.adding.map { line in
                (String(line.prefix { $0 != "=" }), String(line.drop { $0 != "=" }.dropFirst()))
            }
        )
        #expect(values["CLAUDE_CODE_ENABLE_TELEMETRY"] == "1")
        #expect(values["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:4318")
        #expect(values["OTEL_EXPORTER_OTLP_HEADERS"] == "x-swarmdeck-relay=abc")
        #expect(values["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/protobuf")
        #expect(values["OTEL_RESOURCE_ATTRIBUTES"] == "swarmdeck.swarm.id=a%20b%2Cc,swarmdeck.agent.id=x%3Dy")
        #expect(environment.hiding.contains("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"))
        #expect(environment.hiding.contains("OTEL_EXPORTER_OTLP_HEADERS"))
    }

    @Test("Codex, which reads no OTEL variable, gets its exporter as a -c override after its program; other commands are left alone")
    func codex() {
        let environment = RelayEnvironment(endpoint: "http://127.0.0.1:4318", secret: "abc", stamp: RelayStamp(swarm: "s", agent: "a"))
        let exporter =
            #"otel.exporter={otlp-http={endpoint="http://127.0.0.1:4318/v1/logs", protocol="binary", headers={"x-swarmdeck-relay"="abc"}}}"#
        #expect(environment.command(["/opt/bin/codex", "exec", "fix it"]) == ["/opt/bin/codex", "-c", exporter, "exec", "fix it"])
        #expect(environment.command(["codex"]) == ["codex", "-c", exporter])
        #expect(environment.command(["claude", "-p", "codex"]) == ["claude", "-p", "codex"])
        #expect(environment.command(["/usr/bin/codex-helper"]) == ["/usr/bin/codex-helper"])
    }
}

import OTLP
import SwiftProtobuf
import Testing

@testable import Ingest

/// Limits enforced while parsing: the native parser and the OTLP item count stop at their
/// limits instead of building everything first.
@Suite struct ParseLimitsTests {
    static func events(_ count: Int, attrs: String = "") -> [UInt8] {
        let one = #"{"msgId":"m","swarmId":"s","agentId":"a","kind":"log"\#(attrs)}"#
        return Array((#"{"events":["# + Array(repeating: one, count: count).joined(separator: ",") + "]}").utf8)
    }

    @Test func theParserStopsAtTheEventLimit() throws {
        let limits = NativeBatchParser.Limits(maxEvents: 3, maxAttributeValues: 100)
        #expect(try NativeBatchParser.parse(Self.events(3), limits: limits).count == 3)
        let error = try #require(throws: NativeBatchParser.Malformed.self) { try NativeBatchParser.parse(Self.events(4), limits: limits) }
        #expect(error.tooLarge)
        // Elements that are not events count too: [1,1,1,1] is four.
        let bomb = try #require(throws: NativeBatchParser.Malformed.self) {
            try NativeBatchParser.parse(Array(#"{"events":[1,1,1,1]}"#.utf8), limits: limits)
        }
        #expect(bomb.tooLarge)
    }

    @Test func attrsValuesAreCountedAcrossTheBatch() throws {
        let limits = NativeBatchParser.Limits(maxEvents: 100, maxAttributeValues: 10)
        // {"k":[1,2]} is four values (the object, the array, two numbers); two events: eight.
        #expect(try NativeBatchParser.parse(Self.events(2, attrs: #","attrs":{"k":[1,2]}"#), limits: limits).count == 2)
        let error = try #require(throws: NativeBatchParser.Malformed.self) {
            try NativeBatchParser.parse(Self.events(3, attrs: #","attrs":{"k":[1,2]}"#), limits: limits)
        }
        #expect(error.tooLarge)
    }

    @Test func skippedValuesAreCheckedButNotCounted() throws {
        let limits = NativeBatchParser.Limits(maxEvents: 10, maxAttributeValues: 1)
        let junk = "[" + Array(repeating: #"{"x":"\u00e9\n"}"#, count: 1000).joined(separator: ",") + "]"
        let body = Array(#"{"meta":\#(junk),"events":[{"msgId":"m","swarmId":"s","agentId":"a","kind":"log","unknown":\#(junk)}]}"#.utf8)
        #expect(try NativeBatchParser.parse(body, limits: limits).count == 1)
        // Skipping is still strict JSON.
        for broken in [#"{"meta":[1,],"events":[]}"#, #"{"meta":"\x","events":[]}"#, #"{"meta":{"a"},"events":[]}"#, #"{"meta":"a"#] {
            #expect(throws: NativeBatchParser.Malformed.self, "\(broken)") { try NativeBatchParser.parse(Array(broken.utf8), limits: limits) }
        }
    }

    static func logsExport(resources: Int, scopes: Int, records: Int) -> OTLPExportLogsRequest {
        var export = OTLPExportLogsRequest()
        for _ in 0..<resources {
            var resource = Opentelemetry_Proto_Logs_V1_ResourceLogs()
            resource.resource.attributes = [OTLPKeyValue("service.name", "x")]
            for _ in 0..<scopes {
                var scope = Opentelemetry_Proto_Logs_V1_ScopeLogs()
                scope.scope.name = "s"
                scope.logRecords = (0..<records).map { index in
                    var record = OTLPLogRecord()
                    record.body.stringValue = "line \(index)"
                    record.timeUnixNano = UInt64(index)
                    return record
                }
                resource.scopeLogs.append(scope)
            }
            export.resourceLogs.append(resource)
        }
        return export
    }

    @Test func otlpItemsAreCountedInProtobufAndJSONWithoutDecoding() throws {
        let export = Self.logsExport(resources: 2, scopes: 3, records: 4)
        let protobuf: [UInt8] = try export.serializedBytes()
        let json: [UInt8] = try export.jsonUTF8Bytes()
        #expect(try OTLPItemCount.logs.count(protobuf: protobuf, limit: 100).items == 24)
        #expect(try OTLPItemCount.logs.count(json: json, limit: 100).items == 24)
        #expect(throws: OTLPItemCount.TooMany.self) { try OTLPItemCount.logs.count(protobuf: protobuf, limit: 23) }
        #expect(throws: OTLPItemCount.TooMany.self) { try OTLPItemCount.logs.count(json: json, limit: 23) }
        // A cut-off body is malformed, not counted short.
        #expect(throws: OTLPItemCount.Malformed.self) { try OTLPItemCount.logs.count(protobuf: Array(protobuf.dropLast(3)), limit: 100) }
    }

    @Test func metricPointsAreCountedUnderWhicheverDataTheMetricHas() throws {
        var export = OTLPExportMetricsRequest()
        var resource = Opentelemetry_Proto_Metrics_V1_ResourceMetrics()
        var scope = Opentelemetry_Proto_Metrics_V1_ScopeMetrics()
        var gauge = Opentelemetry_Proto_Metrics_V1_Metric()
        gauge.name = "g"
        gauge.gauge.dataPoints = (0..<3).map { _ in Opentelemetry_Proto_Metrics_V1_NumberDataPoint() }
        var sum = Opentelemetry_Proto_Metrics_V1_Metric()
        sum.name = "s"
        sum.sum.dataPoints = (0..<2).map { _ in Opentelemetry_Proto_Metrics_V1_NumberDataPoint() }
        var histogram = Opentelemetry_Proto_Metrics_V1_Metric()
        histogram.name = "h"
        histogram.histogram.dataPoints = [Opentelemetry_Proto_Metrics_V1_HistogramDataPoint()]
        scope.metrics = [gauge, sum, histogram]
        resource.scopeMetrics = [scope]
        export.resourceMetrics = [resource]
        #expect(try OTLPItemCount.metrics.count(protobuf: try export.serializedBytes(), limit: 100).items == 6)
        #expect(try OTLPItemCount.metrics.count(json: try export.jsonUTF8Bytes(), limit: 100).items == 6)
    }

    @Test func nestedValuesAreCountedSoThatOneItemCannotHideMillionsOfAttributes() throws {
        var export = Self.logsExport(resources: 1, scopes: 1, records: 1)
        export.resourceLogs[0].scopeLogs[0].logRecords[0].attributes = (0..<1000).map { OTLPKeyValue("k\($0)", "v") }
        let protobuf: [UInt8] = try export.serializedBytes()
        let json: [UInt8] = try export.jsonUTF8Bytes()
        let binary = try OTLPItemCount.logs.count(protobuf: protobuf, limit: 100)
        let text = try OTLPItemCount.logs.count(json: json, limit: 100)
        #expect(binary.items == 1 && text.items == 1)
        // Each attribute is a KeyValue with its key and an AnyValue with its string: several values.
        #expect(binary.values >= 3000 && text.values >= 3000, "\(binary) \(text)")
        #expect(throws: OTLPItemCount.TooMany.self) { try OTLPItemCount.logs.count(protobuf: protobuf, limit: 100, maxValues: 2000) }
        #expect(throws: OTLPItemCount.TooMany.self) { try OTLPItemCount.logs.count(json: json, limit: 100, maxValues: 2000) }
        // Strings that are not messages count once, whatever their bytes.
        var plain = Self.logsExport(resources: 1, scopes: 1, records: 1)
        plain.resourceLogs[0].scopeLogs[0].logRecords[0].body.stringValue = String(repeating: "fix the flaky test ", count: 500)
        #expect(try OTLPItemCount.logs.count(protobuf: try plain.serializedBytes(), limit: 100).values < 40)
    }
}

public import OTLP
import SwiftProtobuf

/// What the relay writes on every export it takes: the connector's swarm and agent, as
/// `swarmdeck.swarm.id` and `swarmdeck.agent.id` on every resource, with those keys removed
/// from every item. Ingest reads an item's own attributes before its resource's, and these two
/// keys before any other it names an agent by, so a command under the connector can neither
/// post as another agent nor in another swarm, whatever its exports say. Pure.
public struct RelayStamp: Sendable, Equatable {
    /// The resource attribute naming the swarm.
    public static let swarmKey = "swarmdeck.swarm.id"
    /// The resource attribute naming the agent.
    public static let agentKey = "swarmdeck.agent.id"

    public var swarm: String
    public var agent: String

    public init(swarm: String, agent: String) {
        self.swarm = swarm
        self.agent = agent
    }

    /// The body of an export of `signal` (protobuf, or OTLP JSON when `json`), stamped, in the
    /// same encoding unless `output` names another (OTLP JSON's hex ids survive the round trip as the same text, which ingest
    /// reads as hex only in JSON). Throws when it is not such an export.
    public func stamp(_ signal: RelaySignal, body: [UInt8], json: Bool, as output: Encoding? = nil) throws -> [UInt8] {
        let export = try self.stamped(signal, body: body, json: json)
        return (output ?? (json ? .json : .protobuf)) == .json ? try export.jsonUTF8Bytes() : try export.serializedBytes()
    }

    /// An OTLP JSON export of `signal`, stamped, decoded once: as JSON (what is forwarded) and
    /// as protobuf (what is counted).
    public func stampJSON(_ signal: RelaySignal, body: [UInt8]) throws -> (json: [UInt8], protobuf: [UInt8]) {
        let export = try self.stamped(signal, body: body, json: true)
        return (try export.jsonUTF8Bytes(), try export.serializedBytes())
    }

    private func stamped(_ signal: RelaySignal, body: [UInt8], json: Bool) throws -> any SwiftProtobuf.Message {
        switch signal {
        case .traces:
            var export: OTLPExportTraceRequest = try Self.decode(body, json: json)
            self.stamp(&export)
            return export
        case .logs:
            var export: OTLPExportLogsRequest = try Self.decode(body, json: json)
            self.stamp(&export)
            return export
        case .metrics:
            var export: OTLPExportMetricsRequest = try Self.decode(body, json: json)
            self.stamp(&export)
            return export
        }
    }

    /// An export's encoding.
    public enum Encoding: Sendable {
        case protobuf
        case json
    }

    private static let jsonOptions: JSONDecodingOptions = {
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        return options
    }()

    private static func decode<Export: SwiftProtobuf.Message>(_ body: [UInt8], json: Bool) throws -> Export {
        json ? try Export(jsonUTF8Bytes: body, options: Self.jsonOptions) : try Export(serializedBytes: body)
    }

    /// Stamps every resource of a traces export and strips every span.
    public func stamp(_ export: inout OTLPExportTraceRequest) {
        for index in export.resourceSpans.indices {
            self.stamp(resource: &export.resourceSpans[index].resource.attributes)
            for scope in export.resourceSpans[index].scopeSpans.indices {
                for span in export.resourceSpans[index].scopeSpans[scope].spans.indices {
                    Self.strip(&export.resourceSpans[index].scopeSpans[scope].spans[span].attributes)
                }
            }
        }
    }

    /// Stamps every resource of a logs export and strips every record.
    public func stamp(_ export: inout OTLPExportLogsRequest) {
        for index in export.resourceLogs.indices {
            self.stamp(resource: &export.resourceLogs[index].resource.attributes)
            for scope in export.resourceLogs[index].scopeLogs.indices {
                for record in export.resourceLogs[index].scopeLogs[scope].logRecords.indices {
                    Self.strip(&export.resourceLogs[index].scopeLogs[scope].logRecords[record].attributes)
                }
            }
        }
    }

    /// Stamps every resource of a metrics export and strips every data point.
    public func stamp(_ export: inout OTLPExportMetricsRequest) {
        for index in export.resourceMetrics.indices {
            self.stamp(resource: &export.resourceMetrics[index].resource.attributes)
            for scope in export.resourceMetrics[index].scopeMetrics.indices {
                for metric in export.resourceMetrics[index].scopeMetrics[scope].metrics.indices {
                    Self.strip(&export.resourceMetrics[index].scopeMetrics[scope].metrics[metric])
                }
            }
        }
    }

    private func stamp(resource attributes: inout [OTLPKeyValue]) {
        Self.strip(&attributes)
        attributes.append(OTLPKeyValue(Self.swarmKey, self.swarm))
        attributes.append(OTLPKeyValue(Self.agentKey, self.agent))
    }

    private static func strip(_ attributes: inout [OTLPKeyValue]) {
        attributes.removeAll { $0.key == Self.swarmKey || $0.key == Self.agentKey }
    }

    private static func strip(_ metric: inout OTLPMetric) {
        switch metric.data {
        case .gauge(var gauge)?:
            for point in gauge.dataPoints.indices { Self.strip(&gauge.dataPoints[point].attributes) }
            metric.data = .gauge(gauge)
        case .sum(var sum)?:
            for point in sum.dataPoints.indices { Self.strip(&sum.dataPoints[point].attributes) }
            metric.data = .sum(sum)
        case .histogram(var histogram)?:
            for point in histogram.dataPoints.indices { Self.strip(&histogram.dataPoints[point].attributes) }
            metric.data = .histogram(histogram)
        case .exponentialHistogram(var histogram)?:
            for point in histogram.dataPoints.indices { Self.strip(&histogram.dataPoints[point].attributes) }
            metric.data = .exponentialHistogram(histogram)
        case .summary(var summary)?:
            for point in summary.dataPoints.indices { Self.strip(&summary.dataPoints[point].attributes) }
            metric.data = .summary(summary)
        case nil:
            break
        }
    }
}

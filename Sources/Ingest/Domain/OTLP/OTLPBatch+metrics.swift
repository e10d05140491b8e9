import OTLP
import SwiftProtobuf

extension OTLPBatch {
    /// Maps every data point to a `metric` event named after its metric: a gauge's or sum's
    /// value; a histogram's, exponential histogram's or summary's sum, with `count` (and `min`,
    /// `max`) in `attrs` (a histogram point without a sum is rejected: there is no value to
    /// show). Points flagged `NO_RECORDED_VALUE` are skipped. Sums carry their temporality, so `claude_code.token.usage` and
    /// `claude_code.cost.usage` (delta by default) can be added up as they come.
    mutating func add(_ request: OTLPExportMetricsRequest) {
        for resourceMetrics in request.resourceMetrics {
            let resource = OTLPAttributes(resource: resourceMetrics.resource.attributes)
            let resourceBytes: [UInt8] = (try? resourceMetrics.resource.serializedBytes()) ?? []
            for scopeMetrics in resourceMetrics.scopeMetrics {
                let scope = Array("\(scopeMetrics.scope.name)\u{0}\(scopeMetrics.scope.version)".utf8)
                for metric in scopeMetrics.metrics {
                    self.add(metric, resource: resource, resourceBytes: resourceBytes, scope: scope)
                }
            }
        }
    }

    private mutating func add(_ metric: OTLPMetric, resource: OTLPAttributes, resourceBytes: [UInt8], scope: [UInt8]) {
        // The metric's name and type with its scope: two scopes (or types) with the same point
        // are two items, not duplicates.
        let name = Array(metric.name.utf8) + [0] + Array(Self.typeName(metric.data).utf8) + [0] + scope
        func point(
            _ point: some SwiftProtobuf.Message,
            attributes: [OTLPKeyValue],
            time: UInt64,
            flags: UInt32,
            value: Double?,
            extra: [(String, JSONValue)]
        ) {
            let item = self.beginItem()
            // NO_RECORDED_VALUE: a staleness marker, not a measurement.
            if flags & 1 != 0 { return }
            guard let value else {
                self.reject(item, "a data point of \(OTLPAttributes.cut(metric.name, to: 64)) has no value")
                return
            }
            let attributes = resource.with(item: attributes)
            var event = OTLPSource.event(
                "metric",
                msgID: OTLPBatch.messageID("metric", resourceBytes, name, (try? point.serializedBytes()) ?? []),
                attributes: attributes,
                ts: OTLPBatch.milliseconds(time)
            )
            event.name = metric.name
            event.value = value
            event.unit = metric.unit.isEmpty ? nil : metric.unit
            let own: [(String, JSONValue)] = if case .object(let pairs)? = attributes.json { pairs } else { [] }
            event.attrs = own.isEmpty && extra.isEmpty ? nil : .object(own + extra)
            self.add(event, item: item)
        }

        switch metric.data {
        case .gauge(let gauge)?:
            for dataPoint in gauge.dataPoints {
                point(
                    dataPoint,
                    attributes: dataPoint.attributes,
                    time: dataPoint.timeUnixNano,
                    flags: dataPoint.flags,
                    value: dataPoint.number,
                    extra: []
                )
            }
        case .sum(let sum)?:
            let temporality: [(String, JSONValue)] = [
                ("temporality", .string(sum.aggregationTemporality == .delta ? "delta" : "cumulative")),
                ("monotonic", .bool(sum.isMonotonic)),
            ]
            for dataPoint in sum.dataPoints {
                point(
                    dataPoint,
                    attributes: dataPoint.attributes,
                    time: dataPoint.timeUnixNano,
                    flags: dataPoint.flags,
                    value: dataPoint.number,
                    extra: temporality
                )
            }
        case .histogram(let histogram)?:
            for dataPoint in histogram.dataPoints {
                var extra: [(String, JSONValue)] = [("count", .number(Double(dataPoint.count)))]
                if dataPoint.hasMin { extra.append(("min", .number(dataPoint.min))) }
                if dataPoint.hasMax { extra.append(("max", .number(dataPoint.max))) }
                point(
                    dataPoint,
                    attributes: dataPoint.attributes,
                    time: dataPoint.timeUnixNano,
                    flags: dataPoint.flags,
                    value: dataPoint.hasSum ? dataPoint.sum : nil,
                    extra: extra
                )
            }
        case .exponentialHistogram(let histogram)?:
            for dataPoint in histogram.dataPoints {
                var extra: [(String, JSONValue)] = [("count", .number(Double(dataPoint.count)))]
                if dataPoint.hasMin { extra.append(("min", .number(dataPoint.min))) }
                if dataPoint.hasMax { extra.append(("max", .number(dataPoint.max))) }
                point(
                    dataPoint,
                    attributes: dataPoint.attributes,
                    time: dataPoint.timeUnixNano,
                    flags: dataPoint.flags,
                    value: dataPoint.hasSum ? dataPoint.sum : nil,
                    extra: extra
                )
            }
        case .summary(let summary)?:
            for dataPoint in summary.dataPoints {
                point(
                    dataPoint,
                    attributes: dataPoint.attributes,
                    time: dataPoint.timeUnixNano,
                    flags: dataPoint.flags,
                    value: dataPoint.sum,
                    extra: [("count", .number(Double(dataPoint.count)))]
                )
            }
        case nil:
            break
        }
    }
}

extension OTLPBatch {
    static func typeName(_ data: OTLPMetric.OneOf_Data?) -> String {
        switch data {
        case .gauge?: "gauge"
        case .sum?: "sum"
        case .histogram?: "histogram"
        case .exponentialHistogram?: "exponential_histogram"
        case .summary?: "summary"
        case nil: ""
        }
    }
}

extension OTLPNumberDataPoint {
    /// The point's value as a Double; nil when it has none or it is not finite.
    var number: Double? {
        switch self.value {
        case .asDouble(let double)?: double.isFinite ? double : nil
        case .asInt(let int)?: Double(int)
        case nil: nil
        }
    }
}

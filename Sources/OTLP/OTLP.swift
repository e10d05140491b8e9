// The OTLP subset ingest receives and the load generator sends: the generated messages of
// proto/opentelemetry (opentelemetry-proto v1.11.0) and google.rpc.Status, which OTLP/HTTP
// uses for error bodies. Regenerate with scripts/generate-proto.

/// `POST /v1/traces` body.
public typealias OTLPExportTraceRequest = Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest
/// `POST /v1/traces` answer.
public typealias OTLPExportTraceResponse = Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceResponse
/// `POST /v1/logs` body.
public typealias OTLPExportLogsRequest = Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceRequest
/// `POST /v1/logs` answer.
public typealias OTLPExportLogsResponse = Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceResponse
/// `POST /v1/metrics` body.
public typealias OTLPExportMetricsRequest = Opentelemetry_Proto_Collector_Metrics_V1_ExportMetricsServiceRequest
/// `POST /v1/metrics` answer.
public typealias OTLPExportMetricsResponse = Opentelemetry_Proto_Collector_Metrics_V1_ExportMetricsServiceResponse

public typealias OTLPResource = Opentelemetry_Proto_Resource_V1_Resource
public typealias OTLPKeyValue = Opentelemetry_Proto_Common_V1_KeyValue
public typealias OTLPAnyValue = Opentelemetry_Proto_Common_V1_AnyValue
public typealias OTLPSpan = Opentelemetry_Proto_Trace_V1_Span
public typealias OTLPLogRecord = Opentelemetry_Proto_Logs_V1_LogRecord
public typealias OTLPMetric = Opentelemetry_Proto_Metrics_V1_Metric
public typealias OTLPNumberDataPoint = Opentelemetry_Proto_Metrics_V1_NumberDataPoint
/// An OTLP/HTTP error body.
public typealias OTLPStatus = Google_Rpc_Status

extension OTLPKeyValue {
    /// A key with a string value.
    public init(_ key: String, _ value: String) {
        self.init()
        self.key = key
        self.value.stringValue = value
    }

    /// A key with an integer value.
    public init(_ key: String, _ value: Int64) {
        self.init()
        self.key = key
        self.value.intValue = value
    }

    /// A key with a floating-point value.
    public init(_ key: String, _ value: Double) {
        self.init()
        self.key = key
        self.value.doubleValue = value
    }

    /// A key with a boolean value.
    public init(_ key: String, _ value: Bool) {
        self.init()
        self.key = key
        self.value.boolValue = value
    }
}

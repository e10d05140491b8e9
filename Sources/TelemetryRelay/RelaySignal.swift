public import OTLP

/// The three OTLP/HTTP signals the relay takes, each at its standard path.
public enum RelaySignal: String, Sendable, CaseIterable, Hashable {
    case traces
    case logs
    case metrics

    /// Its path: `/v1/traces`, `/v1/logs` or `/v1/metrics`.
    public var path: String { "/v1/" + self.rawValue }

    /// Where its items (spans, log records, data points) are in an export.
    public var itemCount: OTLPItemCount {
        switch self {
        case .traces: .traces
        case .logs: .logs
        case .metrics: .metrics
        }
    }
}

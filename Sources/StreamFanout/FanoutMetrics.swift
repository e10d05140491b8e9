import Metrics

/// Stream-fanout's metrics.
enum FanoutMetrics {
    static let backfilled = Counter(label: "fanout_backfilled_events_total")
    static let connections = Meter(label: "fanout_connections")
    static let gapNotices = Counter(label: "fanout_gap_notices_total")
    static let caughtUp = Counter(label: "fanout_catch_up_events_total")
    static let delivered = Counter(label: "fanout_events_delivered_total")
}

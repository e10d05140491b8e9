import Metrics

/// Stream-fanout's metrics.
enum FanoutMetrics {
    static let backfilled = Counter(label: "fanout_backfilled_events_total")
    static let connections = Meter(label: "fanout_connections")
    static let gapNotices = Counter(label: "fanout_gap_notices_total")
    /// Events sent from the log (replays and catch-ups).
    static let caughtUp = Counter(label: "fanout_replayed_events_total")
    /// Times a connection's queue overflowed and it caught up from the log.
    static let catchUps = Counter(label: "fanout_catch_ups_total")
    static let delivered = Counter(label: "fanout_events_delivered_total")
    /// Repeated log lines collapsed into `suppressed` notices.
    static let suppressed = Counter(label: "fanout_suppressed_events_total")
}

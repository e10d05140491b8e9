import Metrics
import Prometheus
import ServiceKit

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
    /// Inside the server: from a live event's NATS batch reaching the feed to a connection's
    /// writer writing it, per connection and per batch of the writer (its oldest live event).
    static let delivery = ServiceMetrics.registry.makeDurationHistogram(
        descriptor: MetricNameDescriptor(
            namespace: "fanout",
            metricName: "delivery",
            unitName: "seconds",
            helpText: "From a live event's NATS batch reaching the feed to a connection's writer writing it (the oldest of each writer batch)"
        ),
        buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500].map { Duration.microseconds(Int64($0 * 1000)) }
    )
    /// Repeated log lines collapsed into `suppressed` notices.
    static let suppressed = Counter(label: "fanout_suppressed_events_total")
}

/// The relay's bounds, each with its overflow behaviour (docs/agents.md lists them).
public struct RelayLimits: Sendable, Equatable {
    /// The largest export body, as sent and once inflated: 4 MiB; past it, 413.
    public var maxBodyBytes = 4 << 20
    /// The largest OTLP JSON export, once inflated: 256 KiB (JSON is decoded before it is
    /// counted); past it, 413.
    public var maxJSONBodyBytes = 256 << 10
    /// The most values (fields, nested messages, JSON values) in one export, counted before it
    /// is decoded, and in one forward: 1 048 576, ingest's own limit; past it, 413.
    public var maxValuesPerExport = 1 << 20
    /// The most items (spans, log records, data points) in one export: 10 000; past it, 413.
    public var maxItemsPerExport = 10_000
    /// Items a second, sustained: 5 000; an export the bucket cannot pay for gets 429 with
    /// `Retry-After` (the command's exporter retries later or drops it; counted as refused).
    public var itemsPerSecond = 5_000.0
    /// Items at once, above the rate: 20 000.
    public var burstItems = 20_000.0
    /// What waits for ingest: 32 MiB of stamped exports; past it, 503 with `Retry-After`
    /// (counted as refused), so a relay that cannot reach ingest never holds the command up.
    public var bufferBytes = 32 << 20
    /// What one forward to ingest carries at most: 4 MiB and 10 000 items (ingest's own limits
    /// are 8 MiB and 10 000).
    public var forwardBytes = 4 << 20
    public var forwardItems = 10_000
    /// How long an answer from ingest may take: 10 s.
    public var forwardTimeout = Duration.seconds(10)
    /// Forwards of one batch in a row that ingest does not take (unreachable, busy, 5xx) before
    /// the batch is dropped: 30 (at most 5 s apart: a few minutes).
    public var maxForwardAttempts = 30
    /// How long an idle connection to the relay stays open: 30 s.
    public var idleTimeout = Duration.seconds(30)
    /// How long ``TelemetryRelay/close()`` keeps forwarding what is left: 5 s.
    public var drainTime = Duration.seconds(5)

    public init() {}
}

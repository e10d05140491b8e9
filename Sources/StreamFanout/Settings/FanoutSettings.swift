public import ServiceKit

/// Stream-fanout's own configuration keys and their values.
public struct FanoutSettings: ServiceSettings {
    /// The schema of ingest's event log, read (never written) for replay and back-fill.
    @Setting(.eventLogSchema("fanout.event-log-schema", "for replay and back-fill"))
    var eventLogSchema: String
    /// Stream-fanout's own schema (ACP acknowledgements).
    @Setting(
        "fanout.schema",
        "the Postgres schema stream-fanout owns (acp_acks: ACP acknowledgements), migrated at start",
        default: "fanout",
        .identifier
    )
    public var schema: String
    /// Live events queued for one connection; past it the connection catches up from the log.
    @Setting("fanout.queue-events", "live events queued per connection before it catches up from the log", default: 1024, in: 16...1_000_000)
    var queueEvents: Int
    /// Bytes of those events.
    @Setting("fanout.queue-bytes", "bytes of live events queued per connection", default: 1_048_576, in: (16 << 10)...(1 << 30))
    var queueBytes: Int
    /// Events one connection may be behind before it skips to the head with a gap notice.
    @Setting("fanout.max-catch-up-events", "events a connection may lag before it skips ahead with a gap notice", default: 10_000, in: 0...10_000_000)
    var maxCatchUpEvents: Int
    /// Seconds between server pings; a client that has not answered two is disconnected.
    @Setting(
        "fanout.ping-seconds",
        "server ping interval; on `/v1/stream` two unanswered close the connection, on `/v1/acp` they are WebSocket ping frames",
        default: 15,
        in: 1...3600
    )
    var pingSeconds: Int
    /// The rate cap of a subscription that names none (the seed's default stream cap).
    @Setting("fanout.default-events-per-second", "a subscription's rate cap when it names none", default: 200, in: 1...1_000_000)
    var defaultEventsPerSecond: Int
    /// The highest rate cap a client may ask for.
    @Setting("fanout.max-events-per-second", "the highest rate cap a client may ask for", default: 10_000, in: 1...1_000_000)
    var maxEventsPerSecond: Int
    /// Largest client message; larger closes the connection (1009).
    @Setting("fanout.max-message-bytes", "largest client message (larger: close 1009)", default: 65_536, in: 1024...(16 << 20))
    var maxMessageBytes: Int
    /// Client messages per 10 seconds; more closes the connection (1008).
    @Setting("fanout.max-messages-per-10s", "client messages per 10 s (more: close 1008)", default: 50, in: 1...100_000)
    var maxMessagesPer10Seconds: Int
    /// Seconds a connection may accept nothing before it is disconnected (1008).
    @Setting("fanout.stalled-seconds", "seconds a connection may accept nothing before it is closed (1008)", default: 30, in: 1...3600)
    var stalledSeconds: Int
    /// Seconds a silent feed waits before it checks the log for events whose publish was lost.
    @Setting("fanout.tail-check-seconds", "seconds a silent feed waits before checking the log for lost publishes", default: 2, in: 1...3600)
    var tailCheckSeconds: Int
    /// WebSockets one tenant may hold open on this replica (both routes together).
    @Setting(
        "fanout.max-connections-per-tenant",
        "WebSockets one tenant may hold open on a replica (both routes); more get an error frame (`RateLimited`) and close 1013",
        default: 1000,
        in: 1...1_000_000
    )
    var maxConnectionsPerTenant: Int
    /// Replay pages read from the log at once on this replica (more wait their turn).
    @Setting(
        "fanout.max-concurrent-replays",
        "replay and catch-up pages read from the log at once on a replica (more wait their turn)",
        default: 16,
        in: 1...10_000
    )
    var maxConcurrentReplays: Int
    /// Seqs a replay may scan without a match before it stops with a gap notice.
    @Setting(
        "fanout.max-replay-scan",
        "seqs a replay scans without a match before it stops with a `gap` (`scan_limit`); each query looks at most at 50,000 seqs (or this, if smaller)",
        default: 1_000_000,
        in: 1000...1_000_000_000
    )
    var maxReplayScan: Int
    /// Seconds between two announcements of the ACP threads each connection follows live
    /// (``ACPPresence``; each holds for three of them).
    @Setting(
        "fanout.acp-presence-seconds",
        "seconds between announcements of the ACP threads each /v1/acp connection follows live (for the notifier)",
        default: 5,
        in: 1...300
    )
    var acpPresenceSeconds: Int
    /// The largest ACP frame a person may send on `/v1/acp` (larger: refused, nothing stored).
    @Setting(
        "fanout.max-client-frame-bytes",
        "the largest ACP frame a person sends on /v1/acp; larger gets a JSON-RPC error (-32006) and nothing is stored; below fanout.max-message-bytes",
        default: 32_768,
        in: 256...(1 << 20)
    )
    var maxClientFrameBytes: Int
    /// ACP frames a device may send per second on this replica (bursts of twice that; a
    /// thread takes twice a device's).
    @Setting(
        "fanout.client-frames-per-second",
        "ACP frames one device sends per second on a replica (bursts of twice that); one thread takes twice that from all its devices; more gets `-32005` with `retry_after`",
        default: 10,
        in: 1...10_000
    )
    var clientFramesPerSecond: Int

    public init() {}
}

extension FanoutSettings {
    /// The budgets of one connection, from these settings.
    func webSocketLimits(liveness: WebSocketLimits.Liveness) -> WebSocketLimits {
        WebSocketLimits(
            maxMessageBytes: self.maxMessageBytes,
            maxMessagesPer10Seconds: self.maxMessagesPer10Seconds,
            pingInterval: .seconds(self.pingSeconds),
            liveness: liveness,
            stalledAfter: .seconds(self.stalledSeconds)
        )
    }
}

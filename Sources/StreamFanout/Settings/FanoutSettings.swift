public import Configuration
public import ServiceKit

/// Stream-fanout's own configuration keys and their values.
public struct FanoutSettings: ServiceSettings {
    /// The schema of ingest's event log, read (never written) for replay and back-fill.
    var eventLogSchema: String
    /// Stream-fanout's own schema (ACP acknowledgements).
    public var schema: String
    /// Live events queued for one connection; past it the connection catches up from the log.
    var queueEvents: Int
    /// Bytes of those events.
    var queueBytes: Int
    /// Events one connection may be behind before it skips to the head with a gap notice.
    var maxCatchUpEvents: Int
    /// Seconds between server pings; a client that has not answered two is disconnected.
    var pingSeconds: Int
    /// The rate cap of a subscription that names none (the seed's default stream cap).
    var defaultEventsPerSecond: Int
    /// The highest rate cap a client may ask for.
    var maxEventsPerSecond: Int
    /// Largest client message; larger closes the connection (1009).
    var maxMessageBytes: Int
    /// Client messages per 10 seconds; more closes the connection (1008).
    var maxMessagesPer10Seconds: Int
    /// Seconds a connection may accept nothing before it is disconnected (1008).
    var stalledSeconds: Int
    /// Seconds a silent feed waits before it checks the log for events whose publish was lost.
    var tailCheckSeconds: Int
    /// WebSockets one tenant may hold open on this replica (both routes together).
    var maxConnectionsPerTenant: Int
    /// Replay pages read from the log at once on this replica (more wait their turn).
    var maxConcurrentReplays: Int
    /// Seqs a replay may scan without a match before it stops with a gap notice.
    var maxReplayScan: Int
    /// Seconds between two announcements of the ACP threads each connection follows live
    /// (``ACPPresence``; each holds for three of them).
    var acpPresenceSeconds: Int
    /// The largest ACP frame a person may send on `/v1/acp` (larger: refused, nothing stored).
    var maxClientFrameBytes: Int
    /// ACP frames a device may send per second on this replica (bursts of twice that; a
    /// thread takes twice a device's).
    var clientFramesPerSecond: Int

    public static let keys: [SettingKey] = [
        .eventLogSchema, .fanoutSchema, .queueEvents, .queueBytes, .maxCatchUpEvents, .pingSeconds, .defaultEventsPerSecond, .maxEventsPerSecond,
        .maxMessageBytes, .maxMessagesPer10Seconds, .stalledSeconds, .tailCheckSeconds, .maxConnectionsPerTenant, .maxConcurrentReplays,
        .maxReplayScan, .acpPresenceSeconds, .maxClientFrameBytes, .clientFramesPerSecond,
    ]

    public init(reader: ConfigReader) throws(ServiceKitError) {
        self.eventLogSchema = try reader.identifierSetting(.eventLogSchema)
        self.schema = try reader.identifierSetting(.fanoutSchema)
        self.queueEvents = try reader.setting(.queueEvents, in: 16...1_000_000)
        self.maxConnectionsPerTenant = try reader.setting(.maxConnectionsPerTenant, in: 1...1_000_000)
        self.queueBytes = try reader.setting(.queueBytes, in: (16 << 10)...(1 << 30))
        self.maxCatchUpEvents = try reader.setting(.maxCatchUpEvents, in: 0...10_000_000)
        self.pingSeconds = try reader.setting(.pingSeconds, in: 1...3600)
        self.defaultEventsPerSecond = try reader.setting(.defaultEventsPerSecond, in: 1...1_000_000)
        self.maxEventsPerSecond = try reader.setting(.maxEventsPerSecond, in: 1...1_000_000)
        self.maxMessageBytes = try reader.setting(.maxMessageBytes, in: 1024...(16 << 20))
        self.maxMessagesPer10Seconds = try reader.setting(.maxMessagesPer10Seconds, in: 1...100_000)
        self.stalledSeconds = try reader.setting(.stalledSeconds, in: 1...3600)
        self.tailCheckSeconds = try reader.setting(.tailCheckSeconds, in: 1...3600)
        self.maxConcurrentReplays = try reader.setting(.maxConcurrentReplays, in: 1...10_000)
        self.maxReplayScan = try reader.setting(.maxReplayScan, in: 1000...1_000_000_000)
        self.acpPresenceSeconds = try reader.setting(.acpPresenceSeconds, in: 1...300)
        self.maxClientFrameBytes = try reader.setting(.maxClientFrameBytes, in: 256...(1 << 20))
        self.clientFramesPerSecond = try reader.setting(.clientFramesPerSecond, in: 1...10_000)
    }
}

extension SettingKey {
    static let eventLogSchema = SettingKey("fanout.event-log-schema", "ingest's schema, read for replay and back-fill", default: "ingest")
    static let fanoutSchema = SettingKey("fanout.schema", "the Postgres schema stream-fanout owns (ACP acknowledgements)", default: "fanout")
    static let maxConnectionsPerTenant = SettingKey(
        "fanout.max-connections-per-tenant",
        "WebSockets one tenant may hold open on a replica (more: an error frame and close 1013)",
        default: "1000"
    )
    static let acpPresenceSeconds = SettingKey(
        "fanout.acp-presence-seconds",
        "seconds between announcements of the ACP threads each /v1/acp connection follows live (for the notifier)",
        default: "5"
    )
    static let maxConcurrentReplays = SettingKey(
        "fanout.max-concurrent-replays",
        "replay and catch-up pages read from the log at once on a replica (more wait their turn)",
        default: "16"
    )
    static let maxReplayScan = SettingKey(
        "fanout.max-replay-scan",
        "seqs of the log a replay may scan without finding a match before it stops with a gap (reason scan_limit)",
        default: "1000000"
    )
    static let queueEvents = SettingKey("fanout.queue-events", "live events queued per connection before it catches up from the log", default: "1024")
    static let queueBytes = SettingKey("fanout.queue-bytes", "bytes of live events queued per connection", default: "1048576")
    static let maxCatchUpEvents = SettingKey(
        "fanout.max-catch-up-events",
        "events a connection may lag before it skips ahead with a gap notice",
        default: "10000"
    )
    static let pingSeconds = SettingKey(
        "fanout.ping-seconds",
        "seconds between server pings (/v1/acp: ping frames; /v1/stream: two unanswered close)",
        default: "15"
    )
    static let defaultEventsPerSecond = SettingKey("fanout.default-events-per-second", "a subscription's rate cap when it names none", default: "200")
    static let maxEventsPerSecond = SettingKey("fanout.max-events-per-second", "the highest rate cap a client may ask for", default: "10000")
    static let maxMessageBytes = SettingKey("fanout.max-message-bytes", "largest client message (larger: close 1009)", default: "65536")
    static let maxMessagesPer10Seconds = SettingKey("fanout.max-messages-per-10s", "client messages per 10 s (more: close 1008)", default: "50")
    static let tailCheckSeconds = SettingKey(
        "fanout.tail-check-seconds",
        "seconds a silent feed waits before checking the log for lost publishes",
        default: "2"
    )
    static let maxClientFrameBytes = SettingKey(
        "fanout.max-client-frame-bytes",
        "the largest ACP frame a person sends on /v1/acp (larger: a JSON-RPC error, nothing stored); below fanout.max-message-bytes",
        default: "32768"
    )
    static let clientFramesPerSecond = SettingKey(
        "fanout.client-frames-per-second",
        "ACP frames a device sends per second per replica (burst twice that; a thread takes twice a device's)",
        default: "10"
    )
    static let stalledSeconds = SettingKey("fanout.stalled-seconds", "seconds a connection may accept nothing before it is closed", default: "30")
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

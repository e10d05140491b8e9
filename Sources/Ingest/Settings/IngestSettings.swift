public import Configuration
public import ServiceKit

/// Ingest's own configuration keys and their values.
public struct IngestSettings: ServiceSettings {
    /// The Postgres schema ingest owns: the event log, ingest keys, ACP threads.
    public var schema: String
    /// Bodies over this are refused with 413 before they are read further.
    var maxBodyBytes: Int
    /// Events in one request; more is a 413 (the parser stops there).
    var maxBatchEvents: Int
    /// JSON values in the `attrs` of one request's events together; more is a 413.
    var maxBatchAttributeValues: Int
    /// Values (fields, nested messages, JSON values) of one OTLP export; more is a 413.
    var maxOTLPValues: Int
    /// Bytes that requests being read and parsed may hold at once (each holds
    /// ``parseMemoryFactor`` times its body); past it requests get 429.
    var maxParsingBytes: Int
    /// One event's encoded size; a larger one is rejected (the rest of the batch goes on).
    var maxEventBytes: Int
    /// Events accepted but not yet committed, across tenants; past it requests get 429.
    var maxQueuedEvents: Int
    /// Bytes of those events (their rendered frames, roughly); past it requests get 429.
    var maxQueuedBytes: Int
    /// The fraction of both that one tenant may hold; past it that tenant's requests get 429.
    var maxQueuedTenantShare: Double
    /// Events one tenant may send per second through this replica's bulk lane, on average; a
    /// tenant over it gets 429 with `Retry-After` until the refill has paid its debt back.
    var tenantEventsPerSecond: Int
    /// What one tenant may send at once above that rate (the bucket's depth).
    var tenantEventsBurst: Int
    /// The same for the priority lane (requests of a few state events).
    var tenantStateEventsPerSecond: Int
    var tenantStateEventsBurst: Int
    /// Events committed in one transaction (requests queued behind it are grouped up to this).
    var writeBatchEvents: Int
    /// How long a positive ingest-key lookup is cached; revocation takes effect within it.
    var keyCacheSeconds: Int
    /// One ACP message's body; larger is a 413.
    var maxACPBodyBytes: Int
    /// How long a group's transaction may take before its requests get 503.
    var commitTimeoutSeconds: Int
    /// Days of the event log kept (whole days of commit, UTC); older day partitions are dropped.
    var retentionDays: Int
    /// How far back from a commit a `msgId` is found (a re-send after it is stored again): the
    /// duplicate check reads only the day partitions this reaches.
    var dedupWindowHours: Int
    /// What the ACP stream (ACP threads' advances, for the notifier) keeps, in bytes and
    /// seconds; the oldest go first.
    var acpStreamMaxBytes: Int
    var acpStreamMaxAgeSeconds: Int
    /// What the ACP stream keeps of one tenant's advances (its oldest go first): one tenant's
    /// flood cannot push out another's.
    var acpStreamMaxPerTenant: Int
    /// Whether runs of committed events go on the bus as one message per chunk (bus contract
    /// v1's batches); false publishes one message per event, the shape consumers read before
    /// batches, for a rolling upgrade (consumers first).
    var busBatches: Bool

    public static let keys: [SettingKey] = [
        .ingestSchema, .maxBodyBytes, .maxBatchEvents, .maxBatchAttributeValues, .maxOTLPValues, .maxParsingBytes, .maxEventBytes, .maxQueuedEvents,
        .maxQueuedBytes,
        .maxQueuedTenantShare, .tenantEventsPerSecond, .tenantEventsBurst, .tenantStateEventsPerSecond,
        .tenantStateEventsBurst,
        .writeBatchEvents, .keyCacheSeconds,
        .commitTimeoutSeconds, .maxACPBodyBytes, .retentionDays, .dedupWindowHours, .acpStreamMaxBytes, .acpStreamMaxAgeSeconds,
        .acpStreamMaxPerTenant, .busBatches,
    ]

    public init(reader: ConfigReader) throws(ServiceKitError) {
        self.schema = try reader.identifierSetting(.ingestSchema)
        self.maxBodyBytes = try reader.setting(.maxBodyBytes, in: 1024...(256 << 20))
        self.maxBatchEvents = try reader.setting(.maxBatchEvents, in: 1...100_000)
        self.maxBatchAttributeValues = try reader.setting(.maxBatchAttributeValues, in: 1...100_000_000)
        self.maxParsingBytes = try reader.setting(.maxParsingBytes, in: (1 << 20)...(64 << 30))
        self.maxOTLPValues = try reader.setting(.maxOTLPValues, in: 1000...100_000_000)
        self.maxEventBytes = try reader.setting(.maxEventBytes, in: 256...(16 << 20))
        self.maxQueuedEvents = try reader.setting(.maxQueuedEvents, in: 1...10_000_000)
        self.maxQueuedBytes = try reader.setting(.maxQueuedBytes, in: (1 << 20)...(64 << 30))
        self.maxQueuedTenantShare = try reader.setting(.maxQueuedTenantShare, in: 0.01...1.0)
        self.tenantEventsPerSecond = try reader.setting(.tenantEventsPerSecond, in: 1...10_000_000)
        self.tenantEventsBurst = try reader.setting(.tenantEventsBurst, in: 1...100_000_000)
        self.tenantStateEventsPerSecond = try reader.setting(.tenantStateEventsPerSecond, in: 1...10_000_000)
        self.tenantStateEventsBurst = try reader.setting(.tenantStateEventsBurst, in: 1...100_000_000)
        self.writeBatchEvents = try reader.setting(.writeBatchEvents, in: 1...100_000)
        self.keyCacheSeconds = try reader.setting(.keyCacheSeconds, in: 0...3600)
        self.commitTimeoutSeconds = try reader.setting(.commitTimeoutSeconds, in: 1...120)
        self.maxACPBodyBytes = try reader.setting(.maxACPBodyBytes, in: 1024...(64 << 20))
        self.retentionDays = try reader.setting(.retentionDays, in: 1...3650)
        self.dedupWindowHours = try reader.setting(.dedupWindowHours, in: 1...(24 * 3650))
        self.acpStreamMaxBytes = try reader.setting(.acpStreamMaxBytes, in: (1 << 20)...(64 << 30))
        self.acpStreamMaxAgeSeconds = try reader.setting(.acpStreamMaxAgeSeconds, in: 60...(7 * 86_400))
        self.acpStreamMaxPerTenant = try reader.setting(.acpStreamMaxPerTenant, in: 100...100_000_000)
        self.busBatches = try reader.setting(.busBatches)
        guard self.maxParsingBytes >= self.maxBodyBytes * Self.parseMemoryFactor + self.maxOTLPValues * Self.decodedBytesPerOTLPValue else {
            throw ServiceKitError(
                .configuration,
                "\(SettingKey.maxParsingBytes) (\(self.maxParsingBytes)) must be at least \(Self.parseMemoryFactor) × \(SettingKey.maxBodyBytes) (\(self.maxBodyBytes)) + \(Self.decodedBytesPerOTLPValue) × \(SettingKey.maxOTLPValues) (\(self.maxOTLPValues)), or the largest request would always get 429"
            )
        }
        guard Double(self.maxQueuedEvents) * self.maxQueuedTenantShare >= Double(self.maxBatchEvents) else {
            throw ServiceKitError(
                .configuration,
                "\(SettingKey.maxQueuedTenantShare) × \(SettingKey.maxQueuedEvents) must be at least \(SettingKey.maxBatchEvents) (\(self.maxBatchEvents)), or a tenant's full batches would always get 429"
            )
        }
        guard self.maxQueuedEvents >= self.maxBatchEvents else {
            throw ServiceKitError(
                .configuration,
                "\(SettingKey.maxQueuedEvents) (\(self.maxQueuedEvents)) must be at least \(SettingKey.maxBatchEvents) (\(self.maxBatchEvents)), or full batches would always get 429"
            )
        }
    }
}

extension IngestSettings {
    /// What serving a request may cost per byte of its body, at most: the body, its copy for
    /// the parser, the parsed events and their values, the rendered frames (measured: see
    /// docs/ingest.md, "Limits and overflow").
    static let parseMemoryFactor = 8
    /// What decoding one OTLP value costs, at most (SwiftProtobuf's structs and their storage;
    /// an estimate): an export takes this per value from the parse budget before it decodes.
    static let decodedBytesPerOTLPValue = 128
}

extension SettingKey {
    static let ingestSchema = SettingKey("ingest.schema", "the Postgres schema ingest owns", default: "ingest")
    static let maxBodyBytes = SettingKey("ingest.max-body-bytes", "request body limit in bytes (413 beyond)", default: "8388608")
    static let maxBatchEvents = SettingKey("ingest.max-batch-events", "events per request (413 beyond)", default: "10000")
    static let maxBatchAttributeValues = SettingKey(
        "ingest.max-batch-attr-values",
        "JSON values in the attrs of one request's events together (413 beyond; the parser stops there)",
        default: "262144"
    )
    static let maxOTLPValues = SettingKey(
        "ingest.max-otlp-values",
        "fields, nested messages and JSON values of one OTLP export, counted before decoding (413 beyond)",
        default: "1048576"
    )
    static let maxParsingBytes = SettingKey(
        "ingest.max-parsing-bytes",
        "bytes requests being read and parsed hold at once, 8 × each body (429 with Retry-After beyond)",
        default: "268435456"
    )
    static let maxEventBytes = SettingKey("ingest.max-event-bytes", "one event's size in bytes (that event is rejected beyond)", default: "65536")
    static let maxQueuedEvents = SettingKey("ingest.max-queued-events", "events waiting for commit across tenants (429 beyond)", default: "200000")
    static let maxQueuedBytes = SettingKey(
        "ingest.max-queued-bytes",
        "bytes of events waiting for commit across tenants (429 beyond)",
        default: "268435456"
    )
    static let maxQueuedTenantShare = SettingKey(
        "ingest.max-queued-tenant-share",
        "the fraction of max-queued-events and max-queued-bytes one tenant may hold (that tenant gets 429 beyond)",
        default: "0.5"
    )
    static let tenantEventsPerSecond = SettingKey(
        "ingest.tenant-events-per-second",
        "events per second one tenant may send through a replica's bulk lane, on average (429 with Retry-After beyond)",
        default: "2000"
    )
    static let tenantEventsBurst = SettingKey(
        "ingest.tenant-events-burst",
        "events one tenant may send at once above its rate (the bucket's depth)",
        default: "4000"
    )
    static let tenantStateEventsPerSecond = SettingKey(
        "ingest.tenant-state-events-per-second",
        "state events per second one tenant may send through a replica's priority lane (requests of at most 16 state events), on average (429 with Retry-After beyond)",
        default: "1000"
    )
    static let tenantStateEventsBurst = SettingKey(
        "ingest.tenant-state-events-burst",
        "state events one tenant may send at once above that rate (every agent of a large swarm changing state together)",
        default: "10000"
    )
    static let writeBatchEvents = SettingKey(
        "ingest.write-batch-events",
        "events per transaction when requests are grouped (a larger single request goes alone)",
        default: "2000"
    )
    static let commitTimeoutSeconds = SettingKey(
        "ingest.commit-timeout-seconds",
        "seconds a transaction may take before its requests get 503",
        default: "5"
    )
    static let maxACPBodyBytes = SettingKey("ingest.max-acp-body-bytes", "one ACP message's body in bytes (413 beyond)", default: "1048576")
    static let retentionDays = SettingKey("ingest.retention-days", "days of event log kept; older day partitions are dropped hourly", default: "7")
    static let dedupWindowHours = SettingKey(
        "ingest.dedup-window-hours",
        "hours back from a commit a msgId is found as a duplicate (a re-send after that is stored again; the check reads only the day partitions this reaches)",
        default: "24"
    )
    static let acpStreamMaxBytes = SettingKey(
        "ingest.acp-stream-max-bytes",
        "bytes of ACP threads' advances the ACP stream keeps for the notifier (the oldest go first)",
        default: "67108864"
    )
    static let acpStreamMaxAgeSeconds = SettingKey(
        "ingest.acp-stream-max-age-seconds",
        "seconds the ACP stream keeps an ACP thread's advance for the notifier",
        default: "3600"
    )
    static let acpStreamMaxPerTenant = SettingKey(
        "ingest.acp-stream-max-per-tenant",
        "ACP thread advances the ACP stream keeps per tenant (that tenant's oldest go first)",
        default: "100000"
    )
    static let busBatches = SettingKey(
        "ingest.bus-batches",
        "publish runs of committed events as one bus message per chunk (false: one message per event, for a rolling upgrade from consumers that read only those)",
        default: "true"
    )
    static let keyCacheSeconds = SettingKey("ingest.key-cache-seconds", "seconds a verified ingest key is cached (revocation delay)", default: "10")
}

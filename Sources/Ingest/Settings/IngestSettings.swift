public import ServiceKit

/// Ingest's own configuration keys and their values.
public struct IngestSettings: ServiceSettings {
    /// The Postgres schema ingest owns: the event log, ingest keys, ACP threads.
    @Setting("ingest.schema", "the Postgres schema ingest owns", default: "ingest", .identifier)
    public var schema: String
    /// Bodies over this are refused with 413 before they are read further.
    @Setting("ingest.max-body-bytes", "request body limit in bytes (413 beyond)", default: 8_388_608, in: 1024...(256 << 20))
    var maxBodyBytes: Int
    /// Events in one request; more is a 413 (the parser stops there).
    @Setting("ingest.max-batch-events", "events per request (413 beyond)", default: 10_000, in: 1...100_000)
    var maxBatchEvents: Int
    /// JSON values in the `attrs` of one request's events together; more is a 413.
    @Setting(
        "ingest.max-batch-attr-values",
        "JSON values in the attrs of one request's events together (413 beyond; the parser stops there)",
        default: 262_144,
        in: 1...100_000_000
    )
    var maxBatchAttributeValues: Int
    /// Values (fields, nested messages, JSON values) of one OTLP export; more is a 413.
    @Setting(
        "ingest.max-otlp-values",
        "fields, nested messages and JSON values of one OTLP export, counted before decoding (413 beyond)",
        default: 1_048_576,
        in: 1000...100_000_000
    )
    var maxOTLPValues: Int
    /// Bytes that requests being read and parsed may hold at once (each holds
    /// ``parseMemoryFactor`` times its body); past it requests get 429.
    @Setting(
        "ingest.max-parsing-bytes",
        "bytes requests being read and parsed hold at once, 8 × each body (429 with Retry-After beyond)",
        default: 268_435_456,
        in: (1 << 20)...(64 << 30)
    )
    var maxParsingBytes: Int
    /// One event's encoded size; a larger one is rejected (the rest of the batch goes on).
    @Setting("ingest.max-event-bytes", "one event's size in bytes (that event is rejected beyond)", default: 65_536, in: 256...(16 << 20))
    var maxEventBytes: Int
    /// Events accepted but not yet committed, across tenants; past it requests get 429.
    @Setting("ingest.max-queued-events", "events waiting for commit across tenants (429 beyond)", default: 200_000, in: 1...10_000_000)
    var maxQueuedEvents: Int
    /// Bytes of those events (their rendered frames, roughly); past it requests get 429.
    @Setting(
        "ingest.max-queued-bytes",
        "bytes of events waiting for commit across tenants (429 beyond)",
        default: 268_435_456,
        in: (1 << 20)...(64 << 30)
    )
    var maxQueuedBytes: Int
    /// The fraction of both that one tenant may hold; past it that tenant's requests get 429.
    @Setting(
        "ingest.max-queued-tenant-share",
        "the fraction of max-queued-events and max-queued-bytes one tenant may hold (that tenant gets 429 beyond)",
        default: 0.5,
        in: 0.01...1.0
    )
    var maxQueuedTenantShare: Double
    /// Events one tenant may send per second through the bulk lane, on average, across every
    /// replica; a tenant over it gets 429 with `Retry-After` until the refill has paid its debt
    /// back.
    @Setting(
        "ingest.tenant-events-per-second",
        "events per second one tenant may send through the bulk lane of all the replicas together, on average (429 with Retry-After beyond)",
        default: 2000,
        in: 1...10_000_000
    )
    var tenantEventsPerSecond: Int
    /// What one tenant may send at once above that rate (the bucket's depth).
    @Setting(
        "ingest.tenant-events-burst",
        "events one tenant may send at once above its rate (the bucket's depth)",
        default: 4000,
        in: 1...100_000_000
    )
    var tenantEventsBurst: Int
    /// The same for the priority lane (requests of a few state events).
    @Setting(
        "ingest.tenant-state-events-per-second",
        "state events per second one tenant may send through the priority lane (requests of at most 16 state events) of all the replicas together, on average (429 with Retry-After beyond)",
        default: 1000,
        in: 1...10_000_000
    )
    var tenantStateEventsPerSecond: Int
    @Setting(
        "ingest.tenant-state-events-burst",
        "state events one tenant may send at once above that rate (every agent of a large swarm changing state together)",
        default: 10_000,
        in: 1...100_000_000
    )
    var tenantStateEventsBurst: Int
    /// Events committed in one transaction (requests queued behind it are grouped up to this).
    @Setting(
        "ingest.write-batch-events",
        "events per transaction when requests are grouped (a larger single request goes alone)",
        default: 2000,
        in: 1...100_000
    )
    var writeBatchEvents: Int
    /// How long a positive ingest-key lookup is cached; revocation takes effect within it.
    @Setting("ingest.key-cache-seconds", "seconds a verified ingest key is cached (revocation delay)", default: 10, in: 0...3600)
    var keyCacheSeconds: Int
    /// One ACP message's body; larger is a 413.
    @Setting("ingest.max-acp-body-bytes", "one ACP message's body in bytes (413 beyond)", default: 1_048_576, in: 1024...(64 << 20))
    var maxACPBodyBytes: Int
    /// How long a group's transaction may take before its requests get 503.
    @Setting("ingest.commit-timeout-seconds", "seconds a transaction may take before its requests get 503", default: 5, in: 1...120)
    var commitTimeoutSeconds: Int
    /// Days of the event log kept (whole days of commit, UTC); older day partitions are dropped.
    @Setting("ingest.retention-days", "days of event log kept; older day partitions are dropped hourly", default: 7, in: 1...3650)
    var retentionDays: Int
    /// How far back from a commit a `msgId` is found (a re-send after it is stored again): the
    /// duplicate check reads only the day partitions this reaches.
    @Setting(
        "ingest.dedup-window-hours",
        "hours back from a commit a msgId is found as a duplicate (a re-send after that is stored again; the check reads only the day partitions this reaches)",
        default: 24,
        in: 1...(24 * 3650)
    )
    var dedupWindowHours: Int
    /// What the ACP stream (ACP threads' advances, for the notifier) keeps, in bytes and
    /// seconds; the oldest go first.
    @Setting(
        "ingest.acp-stream-max-bytes",
        "bytes of ACP threads' advances the ACP stream keeps for the notifier (the oldest go first)",
        default: 67_108_864,
        in: (1 << 20)...(64 << 30)
    )
    var acpStreamMaxBytes: Int
    @Setting(
        "ingest.acp-stream-max-age-seconds",
        "seconds the ACP stream keeps an ACP thread's advance for the notifier",
        default: 3600,
        in: 60...(7 * 86_400)
    )
    var acpStreamMaxAgeSeconds: Int
    /// What the ACP stream keeps of one tenant's advances (its oldest go first): one tenant's
    /// flood cannot push out another's.
    @Setting(
        "ingest.acp-stream-max-per-tenant",
        "ACP thread advances the ACP stream keeps per tenant (that tenant's oldest go first)",
        default: 100_000,
        in: 100...100_000_000
    )
    var acpStreamMaxPerTenant: Int
    /// Whether runs of committed events go on the bus as one message per chunk (bus contract
    /// v1's batches); false publishes one message per event, the shape consumers read before
    /// batches, for a rolling upgrade (consumers first).
    @Setting(
        "ingest.bus-batches",
        "publish runs of committed events as one bus message per chunk (false: one message per event, for a rolling upgrade from consumers that read only those)",
        default: true
    )
    var busBatches: Bool

    public init() {}

    public mutating func validate() throws(ServiceKitError) {
        guard self.maxParsingBytes >= self.maxBodyBytes * Self.parseMemoryFactor + self.maxOTLPValues * Self.decodedBytesPerOTLPValue else {
            throw ServiceKitError(
                .configuration,
                "\(self.$maxParsingBytes) (\(self.maxParsingBytes)) must be at least \(Self.parseMemoryFactor) × \(self.$maxBodyBytes) (\(self.maxBodyBytes)) + \(Self.decodedBytesPerOTLPValue) × \(self.$maxOTLPValues) (\(self.maxOTLPValues)), or the largest request would always get 429"
            )
        }
        guard Double(self.maxQueuedEvents) * self.maxQueuedTenantShare >= Double(self.maxBatchEvents) else {
            throw ServiceKitError(
                .configuration,
                "\(self.$maxQueuedTenantShare) × \(self.$maxQueuedEvents) must be at least \(self.$maxBatchEvents) (\(self.maxBatchEvents)), or a tenant's full batches would always get 429"
            )
        }
        guard self.maxQueuedEvents >= self.maxBatchEvents else {
            throw ServiceKitError(
                .configuration,
                "\(self.$maxQueuedEvents) (\(self.maxQueuedEvents)) must be at least \(self.$maxBatchEvents) (\(self.maxBatchEvents)), or full batches would always get 429"
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

public import Configuration
import Foundation
public import ServiceKit

/// Health-monitor's own configuration keys and their values.
public struct HealthSettings: ServiceSettings {
    /// The Postgres schema health-monitor owns: incidents, thresholds, rollups, the outbox.
    public var schema: String
    /// Ingest's schema, read for the windows' rebuild.
    var ingestSchema: String
    /// How many replicas split the tenants, and which one this is.
    var replicas: Int
    var replicaIndex: Int
    /// How far back a starting replica reads the log, and at most how many events per tenant.
    var rebuildHours: Int
    var rebuildMaxEvents: Int
    /// The context windows of models.
    var models: ModelWindows
    /// The spike detector's sampling interval.
    var sampleSeconds: Int
    /// Bounds per tenant.
    var limits: TenantHealth.Limits
    /// Tenants one replica follows at most.
    var maxTenants: Int
    /// How often a swarm's metric frames are sent (when they changed).
    var metricSeconds: Int
    /// How often changed rollups are written.
    var rollupSeconds: Int
    /// How often every rule is evaluated (besides at once on an event).
    var evaluateMilliseconds: Int
    /// Threshold changes one tenant may make per minute.
    var thresholdWritesPerMinute: Int
    var webBaseURL: String
    var trustedProxies: Set<String>

    public static let keys: [SettingKey] = [
        .healthSchema, .healthIngestSchema, .healthReplicas, .healthReplicaIndex, .rebuildHours, .rebuildMaxEvents, .contextWindows,
        .defaultContextWindow, .sampleSeconds, .maxSessions, .maxSkills, .maxAgents, .maxSwarms, .maxTenants, .metricSeconds, .rollupSeconds,
        .evaluateMilliseconds, .thresholdWritesPerMinute, .healthWebBaseURL, .healthTrustedProxies,
    ]

    public init(reader: ConfigReader) throws(ServiceKitError) {
        self.schema = try reader.identifierSetting(.healthSchema)
        self.ingestSchema = try reader.identifierSetting(.healthIngestSchema)
        self.replicas = try reader.setting(.healthReplicas, in: 1...64)
        self.replicaIndex = try reader.setting(.healthReplicaIndex, in: 0...63)
        guard self.replicaIndex < self.replicas else {
            throw ServiceKitError(.configuration, "health.replica-index must be below health.replicas (\(self.replicas))")
        }
        self.rebuildHours = try reader.setting(.rebuildHours, in: 0...168)
        self.rebuildMaxEvents = try reader.setting(.rebuildMaxEvents, in: 0...10_000_000)
        let window: Int = try reader.setting(.defaultContextWindow, in: 1_000...100_000_000)
        let table: String = try reader.setting(.contextWindows)
        guard let models = ModelWindows(table: table, defaultWindow: Int64(window)) else {
            throw ServiceKitError(.configuration, "health.context-windows must be pattern=tokens,… (got '\(table)')")
        }
        self.models = models
        self.sampleSeconds = try reader.setting(.sampleSeconds, in: 1...3600)
        self.limits = TenantHealth.Limits(
            sessions: try reader.setting(.maxSessions, in: 1...1_000_000),
            skills: try reader.setting(.maxSkills, in: 1...100_000),
            agents: try reader.setting(.maxAgents, in: 1...1_000_000),
            swarms: try reader.setting(.maxSwarms, in: 1...100_000)
        )
        self.maxTenants = try reader.setting(.maxTenants, in: 1...1_000_000)
        self.metricSeconds = try reader.setting(.metricSeconds, in: 1...3600)
        self.rollupSeconds = try reader.setting(.rollupSeconds, in: 1...3600)
        self.evaluateMilliseconds = try reader.setting(.evaluateMilliseconds, in: 50...60_000)
        self.thresholdWritesPerMinute = try reader.setting(.thresholdWritesPerMinute, in: 1...10_000)
        self.webBaseURL = try reader.baseURLSetting(.healthWebBaseURL)
        self.trustedProxies = Set(try reader.setting(.healthTrustedProxies).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
    }

    /// Whether this replica follows `tenant` (replicas split the tenants by a hash of the id).
    func owns(_ tenant: String) -> Bool {
        self.replicas == 1 || Int(Self.mixed(ToolSignature.fnv1a(Array(tenant.utf8))) % UInt64(self.replicas)) == self.replicaIndex
    }

    /// FNV-1a's low bits depend only on the bytes' low bits (with two replicas, the parity of
    /// the odd bytes would pick the replica): MurmurHash3's finaliser spreads every bit into
    /// every other before the remainder is taken.
    static func mixed(_ hash: UInt64) -> UInt64 {
        var h = hash
        h ^= h >> 33
        h &*= 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h &*= 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return h
    }
}

extension SettingKey {
    static let healthSchema = SettingKey("health.schema", "the Postgres schema health-monitor owns", default: "health")
    static let healthIngestSchema = SettingKey(
        "health.ingest-schema",
        "ingest's schema, read (never written) to rebuild the windows",
        default: "ingest"
    )
    static let healthReplicas = SettingKey(
        "health.replicas",
        "how many health-monitor replicas split the tenants (each follows the tenants whose id hashes to its index)",
        default: "1"
    )
    static let healthReplicaIndex = SettingKey("health.replica-index", "this replica's index, 0 … health.replicas − 1", default: "0")
    static let rebuildHours = SettingKey("health.rebuild-hours", "hours of the log a starting replica reads to rebuild its windows", default: "24")
    static let rebuildMaxEvents = SettingKey(
        "health.rebuild-max-events",
        "the most recent events per tenant a starting replica reads (older ones within health.rebuild-hours are skipped)",
        default: "200000"
    )
    static let contextWindows = SettingKey(
        "health.context-windows",
        "context windows by model: pattern=tokens,… (the first pattern the model name contains wins)",
        default: ModelWindows.defaultTable
    )
    static let defaultContextWindow = SettingKey(
        "health.default-context-window",
        "the context window of a model no pattern matches",
        default: "200000"
    )
    static let sampleSeconds = SettingKey(
        "health.sample-seconds",
        "the spike detector's sampling interval (one error-rate sample per skill)",
        default: "60"
    )
    static let maxSessions = SettingKey(
        "health.max-sessions-per-tenant",
        "sessions tracked per tenant (past it the least recently active is dropped)",
        default: "2000"
    )
    static let maxSkills = SettingKey(
        "health.max-skills-per-tenant",
        "tools tracked per tenant (past it the least recently called is dropped)",
        default: "500"
    )
    static let maxAgents = SettingKey(
        "health.max-agents-per-tenant",
        "agents tracked per tenant (past it the least recently active is dropped)",
        default: "2000"
    )
    static let maxSwarms = SettingKey(
        "health.max-swarms-per-tenant",
        "swarms tracked per tenant (past it the least recently active is dropped)",
        default: "200"
    )
    static let maxTenants = SettingKey(
        "health.max-tenants",
        "tenants one replica follows (events of further tenants are counted and ignored)",
        default: "10000"
    )
    static let metricSeconds = SettingKey("health.metric-seconds", "how often a swarm's metric frames are sent, when they changed", default: "10")
    static let rollupSeconds = SettingKey("health.rollup-seconds", "how often changed rollups are written to the schema", default: "2")
    static let evaluateMilliseconds = SettingKey(
        "health.evaluate-milliseconds",
        "how often every rule is evaluated (rules an event touches are evaluated at once)",
        default: "1000"
    )
    static let thresholdWritesPerMinute = SettingKey(
        "health.threshold-writes-per-minute",
        "threshold changes one tenant may make per minute (429 past it)",
        default: "60"
    )
    static let healthWebBaseURL = SettingKey(
        "health.web-base-url",
        "base of the webUrl deep links of incidents and sessions",
        default: "http://127.0.0.1:8080"
    )
    static let healthTrustedProxies = SettingKey(
        "health.trusted-proxies",
        "comma-separated peers whose X-Forwarded-For names the client (the edge); * trusts every peer",
        default: "127.0.0.1,::1"
    )
}

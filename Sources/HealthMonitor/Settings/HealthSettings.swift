import Foundation
public import ServiceKit

/// Health-monitor's own configuration keys and their values.
public struct HealthSettings: ServiceSettings {
    /// The Postgres schema health-monitor owns: incidents, thresholds, rollups, the outbox.
    @Setting("health.schema", "the Postgres schema health-monitor owns", default: "health", .identifier)
    public var schema: String
    /// Ingest's schema, read for the windows' rebuild.
    @Setting(.eventLogSchema("health.ingest-schema", "to rebuild the windows"))
    var ingestSchema: String
    /// How long a replica's lease on an event partition lasts (renewed every third of it).
    @Setting(
        "health.lease-seconds",
        "how long a replica's lease on an event partition lasts; renewed every third of it, and the bound on how long a partition goes unfollowed when its replica dies",
        default: 15,
        in: 3...300
    )
    var leaseSeconds: Int
    /// How far back a replica that takes a partition reads the log, and at most how many events per tenant.
    @Setting("health.rebuild-hours", "hours of the log a replica reads to rebuild the windows of a partition it takes", default: 24, in: 0...168)
    var rebuildHours: Int
    @Setting(
        "health.rebuild-max-events",
        "the most recent events per tenant a replica reads when it takes a partition (older ones within health.rebuild-hours are skipped)",
        default: 200_000,
        in: 0...10_000_000
    )
    var rebuildMaxEvents: Int
    /// The context windows of models by pattern (``models`` adds the default window).
    @Setting(
        "health.context-windows",
        "context windows by model: pattern=tokens,… (the first pattern the model name contains wins)",
        default: ModelWindows(table: ModelWindows.defaultTable, defaultWindow: 0),
        SettingFormat(expected: "pattern=tokens,…", parse: { ModelWindows(table: $0, defaultWindow: 0) }, render: { $0.table })
    )
    var contextWindows: ModelWindows
    @Setting("health.default-context-window", "the context window of a model no pattern matches", default: 200_000, in: 1_000...100_000_000)
    var defaultContextWindow: Int
    /// The spike detector's sampling interval.
    @Setting("health.sample-seconds", "the spike detector's sampling interval (one error-rate sample per skill)", default: 60, in: 1...3600)
    var sampleSeconds: Int
    /// Bounds per tenant (``limits``).
    @Setting(
        "health.max-sessions-per-tenant",
        "sessions tracked per tenant (past it the least recently active is dropped)",
        default: 2000,
        in: 1...1_000_000
    )
    var maxSessions: Int
    @Setting("health.max-skills-per-tenant", "tools tracked per tenant (past it the least recently called is dropped)", default: 500, in: 1...100_000)
    var maxSkills: Int
    @Setting(
        "health.max-agents-per-tenant",
        "agents tracked per tenant (past it the least recently active is dropped)",
        default: 2000,
        in: 1...1_000_000
    )
    var maxAgents: Int
    @Setting(
        "health.max-swarms-per-tenant",
        "swarms tracked per tenant (past it the least recently active is dropped)",
        default: 200,
        in: 1...100_000
    )
    var maxSwarms: Int
    /// Tenants one replica follows at most.
    @Setting(
        "health.max-tenants",
        "tenants one replica follows (events of further tenants are counted and ignored)",
        default: 10_000,
        in: 1...1_000_000
    )
    var maxTenants: Int
    /// How often a swarm's metric frames are sent (when they changed).
    @Setting("health.metric-seconds", "how often a swarm's metric frames are sent, when they changed", default: 10, in: 1...3600)
    var metricSeconds: Int
    /// How often changed rollups are written.
    @Setting("health.rollup-seconds", "how often changed rollups are written to the schema", default: 2, in: 1...3600)
    var rollupSeconds: Int
    /// How often every rule is evaluated (besides at once on an event).
    @Setting(
        "health.evaluate-milliseconds",
        "how often every rule is evaluated (rules an event touches are evaluated at once)",
        default: 1000,
        in: 50...60_000
    )
    var evaluateMilliseconds: Int
    /// Threshold changes one tenant may make per minute.
    @Setting("health.threshold-writes-per-minute", "threshold changes one tenant may make per minute (429 past it)", default: 60, in: 1...10_000)
    var thresholdWritesPerMinute: Int
    @Setting(.webBaseURL("health", "of incidents (`/incidents/<id>`) and context sessions (`/sessions/<sessionId>`, the console's session page)"))
    var webBaseURL: String
    @Setting(.trustedProxies("health"))
    var trustedProxies: Set<String>

    public init() {}

    /// The context windows of models, with `health.default-context-window` for the rest.
    var models: ModelWindows {
        var models = self.contextWindows
        models.defaultWindow = Int64(self.defaultContextWindow)
        return models
    }

    /// Bounds per tenant.
    var limits: TenantHealth.Limits {
        TenantHealth.Limits(sessions: self.maxSessions, skills: self.maxSkills, agents: self.maxAgents, swarms: self.maxSwarms)
    }
}

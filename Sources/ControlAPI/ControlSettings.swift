public import Configuration
public import ServiceKit

/// Control-api's own configuration keys and their values.
public struct ControlSettings: ServiceSettings {
    /// Control-api's schema: tenants, enrolment codes, devices, refresh tokens, controls, audit.
    public var schema: String
    /// Ingest's schema: the event log (read for the fleet) and the ingest keys (read to
    /// authenticate agents). Never written.
    var ingestSchema: String
    /// PEM file with the ES256 private key access tokens are signed with.
    var privateKeyFile: String
    /// Seconds an access token is valid.
    var accessTokenSeconds: Int
    /// Days a refresh token is valid (each refresh starts a new one).
    var refreshTokenDays: Int
    /// Days a sign-in lasts however often it refreshes; then the device enrols again.
    var signInDays: Int
    /// Seconds without an event after which an agent is `offline`.
    var offlineSeconds: Int
    /// Agents the fleet index keeps per tenant (the longest-offline are evicted past it).
    var maxAgentsPerTenant: Int
    /// Agents one swarm control may address; a larger swarm is refused (control agents one by one).
    var maxSwarmTargets: Int
    /// Workers a tenant may have registered to principals (seed 004's ownership).
    var maxRegisteredWorkers: Int
    /// Of those, what one principal may hold (so that one cannot take the tenant's all).
    var maxRegisteredWorkersPerPrincipal: Int
    /// Seconds a command stays valid; an agent that gets it later answers `expired`.
    var commandSeconds: Int
    /// The longest a command long poll waits (less than a proxy's read timeout).
    var maxPollSeconds: Int
    /// Open agent sessions (each a JetStream consumer) a tenant may have.
    var maxAgentSessions: Int
    /// Agent sessions one tenant may open per minute.
    var agentSessionsPerMinute: Int
    /// Hours an agent session token is valid.
    var agentSessionHours: Int
    /// Hours without a poll after which a session ends by itself.
    var agentSessionIdleHours: Int
    /// Seconds between a session's checks at poll time (recorded as seen, its key still active).
    var agentSessionCheckSeconds: Int
    /// Control requests one actor may make per minute (replays of a request id are free).
    var controlsPerMinute: Int
    /// Control requests one tenant may make per minute, all its actors together.
    var controlsPerTenantPerMinute: Int
    /// The most bytes the commands stream keeps (every tenant's).
    var commandStreamMaxBytes: Int
    /// The most commands the stream keeps for one agent (its subject); older ones go first.
    var commandStreamMaxPerAgent: Int
    /// The base of the `webUrl` deep links, e.g. `https://swarmdeck.example.com`.
    var webBaseURL: String
    /// Device registrations and token refreshes one source may make per minute.
    var authPerMinute: Int
    /// Peers whose `X-Forwarded-For` names the client (the edge); `*` trusts every peer.
    var trustedProxies: Set<String>
    /// Sign-in through an OpenID Connect provider (`control.oidc.*`); nil when off.
    var oidc: OIDCSettings?

    public static let keys: [SettingKey] =
        [
            .controlSchema, .controlIngestSchema, .jwtPrivateKeyFile, .accessTokenSeconds, .refreshTokenDays, .signInDays, .offlineSeconds,
            .commandSeconds, .maxAgentsPerTenant, .maxSwarmTargets, .maxRegisteredWorkers, .maxRegisteredWorkersPerPrincipal, .maxAgentSessions,
            .agentSessionsPerMinute, .agentSessionHours,
            .agentSessionIdleHours, .agentSessionCheckSeconds,
            .controlsPerMinute, .maxPollSeconds, .webBaseURL, .authPerMinute, .trustedProxies, .controlsPerTenantPerMinute,
            .commandStreamMaxBytes, .commandStreamMaxPerAgent,
        ] + OIDCSettings.keys

    public init(reader: ConfigReader) throws(ServiceKitError) {
        self.schema = try reader.identifierSetting(.controlSchema)
        self.ingestSchema = try reader.identifierSetting(.controlIngestSchema)
        self.privateKeyFile = try reader.setting(.jwtPrivateKeyFile)
        self.accessTokenSeconds = try reader.setting(.accessTokenSeconds, in: 60...86_400)
        self.refreshTokenDays = try reader.setting(.refreshTokenDays, in: 1...365)
        self.signInDays = try reader.setting(.signInDays, in: 1...3650)
        self.offlineSeconds = try reader.setting(.offlineSeconds, in: 5...86_400)
        self.commandSeconds = try reader.setting(.commandSeconds, in: 5...86_400)
        self.maxAgentsPerTenant = try reader.setting(.maxAgentsPerTenant, in: 10...10_000_000)
        self.maxSwarmTargets = try reader.setting(.maxSwarmTargets, in: 1...100_000)
        self.maxRegisteredWorkers = try reader.setting(.maxRegisteredWorkers, in: 1...100_000)
        self.maxRegisteredWorkersPerPrincipal = try reader.setting(.maxRegisteredWorkersPerPrincipal, in: 1...100_000)
        self.authPerMinute = try reader.setting(.authPerMinute, in: 1...100_000)
        self.trustedProxies = Set(try reader.setting(.trustedProxies).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        self.controlsPerMinute = try reader.setting(.controlsPerMinute, in: 1...100_000)
        self.controlsPerTenantPerMinute = try reader.setting(.controlsPerTenantPerMinute, in: 1...1_000_000)
        self.commandStreamMaxBytes = try reader.setting(.commandStreamMaxBytes, in: 65_536...(1 << 40))
        self.commandStreamMaxPerAgent = try reader.setting(.commandStreamMaxPerAgent, in: 1...1_000_000)
        self.maxPollSeconds = try reader.setting(.maxPollSeconds, in: 1...30)
        self.maxAgentSessions = try reader.setting(.maxAgentSessions, in: 1...1_000_000)
        self.agentSessionsPerMinute = try reader.setting(.agentSessionsPerMinute, in: 1...1_000_000)
        // Under the revocation stream's day, so an ended session's token is refused until it expires.
        self.agentSessionHours = try reader.setting(.agentSessionHours, in: 1...23)
        self.agentSessionIdleHours = try reader.setting(.agentSessionIdleHours, in: 1...720)
        self.agentSessionCheckSeconds = try reader.setting(.agentSessionCheckSeconds, in: 1...3600)
        self.webBaseURL = try reader.baseURLSetting(.webBaseURL)
        self.oidc = try OIDCSettings.read(reader, webBaseURL: self.webBaseURL)
    }
}

extension SettingKey {
    static let controlSchema = SettingKey("control.schema", "the Postgres schema control-api owns", default: "control")
    static let controlIngestSchema = SettingKey(
        "control.ingest-schema",
        "ingest's schema, read (never written) for the fleet and to check agents' ingest keys",
        default: "ingest"
    )
    static let jwtPrivateKeyFile = SettingKey("auth.jwt.private-key-file", "PEM file with the ES256 private key control-api signs access tokens with")
    static let accessTokenSeconds = SettingKey("control.access-token-seconds", "lifetime of an access token", default: "900")
    static let signInDays = SettingKey(
        "control.sign-in-days",
        "days a device's sign-in lasts however often it refreshes (then it enrols again)",
        default: "90"
    )
    static let refreshTokenDays = SettingKey(
        "control.refresh-token-days",
        "lifetime of a refresh token (each refresh starts a new one)",
        default: "30"
    )
    static let offlineSeconds = SettingKey("control.offline-seconds", "seconds without an event after which an agent is offline", default: "60")
    static let maxAgentsPerTenant = SettingKey(
        "control.max-agents-per-tenant",
        "agents the fleet keeps per tenant; past it the longest-offline tenth is evicted, or a new agent is not listed",
        default: "10000"
    )
    static let maxSwarmTargets = SettingKey(
        "control.max-swarm-targets",
        "agents one swarm control may address (409 past it: control them in smaller groups)",
        default: "1000"
    )
    static let maxRegisteredWorkers = SettingKey(
        "control.max-registered-workers",
        "workers a tenant may have registered to principals (409 past it: release one first)",
        default: "1000"
    )
    static let maxRegisteredWorkersPerPrincipal = SettingKey(
        "control.max-registered-workers-per-principal",
        "workers one principal may have registered (409 past it: release one first)",
        default: "100"
    )
    static let commandSeconds = SettingKey("control.command-seconds", "seconds a command stays valid before an agent answers expired", default: "300")
    static let controlsPerMinute = SettingKey("control.controls-per-minute", "new control requests per actor per minute (429 past it)", default: "60")
    static let controlsPerTenantPerMinute = SettingKey(
        "control.controls-per-tenant-per-minute",
        "new control requests per tenant per minute, all its actors together (429 past it)",
        default: "300"
    )
    static let commandStreamMaxBytes = SettingKey(
        "control.command-stream-max-bytes",
        "bytes the commands stream keeps, every tenant's (JetStream max_bytes: the oldest commands go first), so it never takes the store the revocations need",
        default: "268435456"
    )
    static let commandStreamMaxPerAgent = SettingKey(
        "control.command-stream-max-per-agent",
        "commands the stream keeps for one agent (JetStream max_msgs_per_subject: its oldest go first)",
        default: "1000"
    )
    static let maxPollSeconds = SettingKey(
        "control.max-poll-seconds",
        "the longest a command long poll waits (keep it under the edge's read timeout)",
        default: "30"
    )
    static let authPerMinute = SettingKey(
        "control.auth-per-minute",
        "device registrations and token refreshes per source address per minute (429 past it)",
        default: "30"
    )
    static let trustedProxies = SettingKey(
        "control.trusted-proxies",
        "comma-separated peers whose X-Forwarded-For names the client (the edge); * trusts every peer",
        default: "127.0.0.1,::1"
    )
    static let maxAgentSessions = SettingKey(
        "control.max-agent-sessions",
        "open agent sessions (command queues) per tenant; opening one more answers 429",
        default: "1000"
    )
    static let agentSessionsPerMinute = SettingKey(
        "control.agent-sessions-per-minute",
        "agent sessions one tenant may open per minute (429 past it)",
        default: "600"
    )
    static let agentSessionHours = SettingKey(
        "control.agent-session-hours",
        "lifetime of an agent session token (the connector opens a new session when it expires); at most 23",
        default: "12"
    )
    static let agentSessionIdleHours = SettingKey(
        "control.agent-session-idle-hours",
        "hours without a poll after which an agent session ends by itself (its queue is deleted)",
        default: "24"
    )
    static let agentSessionCheckSeconds = SettingKey(
        "control.agent-session-check-seconds",
        "seconds between the checks a session's polls make: recorded as seen, and its ingest key still active (a deleted key ends the session within this plus 30 s at most)",
        default: "60"
    )
    static let webBaseURL = SettingKey("control.web-base-url", "base of the webUrl deep links in fleet answers", default: "http://127.0.0.1:8080")
}

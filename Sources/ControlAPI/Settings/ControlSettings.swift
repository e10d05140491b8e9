public import ServiceKit

/// Control-api's own configuration keys and their values.
public struct ControlSettings: ServiceSettings {
    /// Control-api's schema: tenants, enrolment codes, devices, refresh tokens, controls, audit.
    @Setting("control.schema", "the Postgres schema control-api owns", default: "control", .identifier)
    public var schema: String
    /// Ingest's schema: the event log (read for the fleet) and the ingest keys (read to
    /// authenticate agents). Never written.
    @Setting(.eventLogSchema("control.ingest-schema", "for the fleet and to check agents' ingest keys"))
    var ingestSchema: String
    /// The ES256 private key access tokens are signed with (PEM), read from its file at start.
    @Setting(
        "auth.jwt.private-key-file",
        "PEM file with the ES256 private key control-api signs access tokens with",
        secret: true,
        .fileContents
    )
    var privateKeyPEM: String
    /// Seconds an access token is valid.
    @Setting("control.access-token-seconds", "lifetime of an access token", default: 900, in: 60...86_400)
    var accessTokenSeconds: Int
    /// Days a refresh token is valid (each refresh starts a new one).
    @Setting("control.refresh-token-days", "lifetime of a refresh token (each refresh starts a new one)", default: 30, in: 1...365)
    var refreshTokenDays: Int
    /// Days a sign-in lasts however often it refreshes; then the device enrols again.
    @Setting("control.sign-in-days", "days a device's sign-in lasts however often it refreshes (then it enrols again)", default: 90, in: 1...3650)
    var signInDays: Int
    /// Seconds without an event after which an agent is `offline`.
    @Setting("control.offline-seconds", "seconds without an event after which an agent is offline", default: 60, in: 5...86_400)
    var offlineSeconds: Int
    /// Agents the fleet lists per tenant (the most recently seen).
    @Setting(
        "control.max-agents-per-tenant",
        "agents the fleet lists per tenant (the overview, swarms, agents, workers): the most recently seen; the others are not listed",
        default: 10_000,
        in: 10...10_000_000
    )
    var maxAgentsPerTenant: Int
    /// Agents one swarm control may address; a larger swarm is refused (control agents one by one).
    @Setting(
        "control.max-swarm-targets",
        "agents one swarm control may address (409 past it: control them in smaller groups)",
        default: 1000,
        in: 1...100_000
    )
    var maxSwarmTargets: Int
    /// Workers a tenant may have registered to principals (seed 004's ownership).
    @Setting(
        "control.max-registered-workers",
        "workers a tenant may have registered to principals (409 past it: release one first)",
        default: 1000,
        in: 1...100_000
    )
    var maxRegisteredWorkers: Int
    /// Of those, what one principal may hold (so that one cannot take the tenant's all).
    @Setting(
        "control.max-registered-workers-per-principal",
        "of those, what one principal may hold, so that one cannot take the tenant's all (409 past it)",
        default: 100,
        in: 1...100_000
    )
    var maxRegisteredWorkersPerPrincipal: Int
    /// Seconds a command stays valid; an agent that gets it later answers `expired`.
    @Setting("control.command-seconds", "seconds a command stays valid before an agent answers expired", default: 300, in: 5...86_400)
    var commandSeconds: Int
    /// The longest a command long poll waits (less than a proxy's read timeout).
    @Setting("control.max-poll-seconds", "the longest a command long poll waits (keep it under the edge's read timeout)", default: 30, in: 1...30)
    var maxPollSeconds: Int
    /// Open agent sessions (each a JetStream consumer) a tenant may have.
    @Setting(
        "control.max-agent-sessions",
        "open agent sessions (command queues) per tenant; opening one more answers 429; also the polls per tenant one replica serves at once",
        default: 1000,
        in: 1...1_000_000
    )
    var maxAgentSessions: Int
    /// Agent sessions one tenant may open per minute.
    @Setting("control.agent-sessions-per-minute", "agent sessions one tenant may open per minute (429 past it)", default: 600, in: 1...1_000_000)
    var agentSessionsPerMinute: Int
    /// Hours an agent session token is valid: under the revocation stream's day, so an ended
    /// session's token is refused until it expires.
    @Setting(
        "control.agent-session-hours",
        "lifetime of an agent session token (the connector opens a new session when it expires); at most 23",
        default: 12,
        in: 1...23
    )
    var agentSessionHours: Int
    /// Hours without a poll after which a session ends by itself.
    @Setting(
        "control.agent-session-idle-hours",
        "hours without a poll after which an agent session ends (checked when its tenant next opens one; its queue is released then)",
        default: 24,
        in: 1...720
    )
    var agentSessionIdleHours: Int
    /// Seconds between a session's checks at poll time (recorded as seen, its key still active).
    @Setting(
        "control.agent-session-check-seconds",
        "seconds between a session's checks at poll time: recorded as seen, its ingest key still active (a deleted key's sessions answer 401 and their queues are released at the first poll after this plus at most 30 s; `AgentSessionTests` with 1 s)",
        default: 60,
        in: 1...3600
    )
    var agentSessionCheckSeconds: Int
    /// Control requests one actor may make per minute (replays of a request id are free).
    @Setting("control.controls-per-minute", "new control requests per actor per minute per replica (429 past it)", default: 60, in: 1...100_000)
    var controlsPerMinute: Int
    /// Control requests one tenant may make per minute, all its actors together.
    @Setting(
        "control.controls-per-tenant-per-minute",
        "new control requests per tenant per minute per replica, all its actors together (429 past it)",
        default: 300,
        in: 1...1_000_000
    )
    var controlsPerTenantPerMinute: Int
    /// The most bytes the commands stream keeps (every tenant's).
    @Setting(
        "control.command-stream-max-bytes",
        "bytes the commands stream keeps, every tenant's (JetStream `max_bytes`; the oldest go first). It bounds the stream so it never takes the JetStream store the revocations stream needs; the per-tenant budget above bounds what one tenant puts in",
        default: 268_435_456,
        in: 65_536...(1 << 40)
    )
    var commandStreamMaxBytes: Int
    /// The most commands the stream keeps for one agent (its subject); older ones go first.
    @Setting(
        "control.command-stream-max-per-agent",
        "commands the stream keeps for one agent (JetStream max_msgs_per_subject: its oldest go first)",
        default: 1000,
        in: 1...1_000_000
    )
    var commandStreamMaxPerAgent: Int
    /// The base of the `webUrl` deep links, e.g. `https://swarmdeck.example.com`.
    @Setting(.webBaseURL("control", "in fleet answers"))
    var webBaseURL: String
    /// Device registrations and token refreshes one source may make per minute.
    @Setting(
        "control.auth-per-minute",
        "device registrations, token refreshes and sign-ins through a provider per source address per minute, across every replica (429 `RateLimited` with `Retry-After` past it)",
        default: 30,
        in: 1...100_000
    )
    var authPerMinute: Int
    /// Peers whose `X-Forwarded-For` names the client (the edge); `*` trusts every peer.
    @Setting(.trustedProxies("control"))
    var trustedProxies: Set<String>
    /// The keys of sign-in through an OpenID Connect provider, read and checked only when
    /// `control.oidc.issuer` is set (sign-in off leaves the others unread).
    @SettingGroup("control.oidc", enabledBy: "issuer")
    var oidcSignIn: OIDCSignInSettings
    /// Sign-in through an OpenID Connect provider (`control.oidc.*`); nil when off.
    var oidc: OIDCSettings?

    public init() {}

    public mutating func validate() throws(ServiceKitError) {
        self.oidc = try self.oidcSignIn.resolved(webBaseURL: self.webBaseURL)
    }
}

public import Contracts

/// What a Swarmdeck service declares; ``ServiceMain`` does the rest the same way for every
/// service (see `docs/adding-a-service.md`).
///
/// In the spirit of Hummingbird's `ApplicationProtocol`: a few requirements, most with
/// defaults. A service is a library target holding a type that conforms, and one line in
/// `ServiceRegistry.all` (`Sources/SwarmdeckServices`): `swarmdeckd <name>` runs it.
public protocol SwarmdeckService: Sendable {
    /// The service's own configuration keys and values.
    associatedtype Settings: ServiceSettings

    /// The service's name: what `swarmdeckd` runs it by, and the name of its logs, its NATS
    /// connection and its HTTP server, e.g. `ingest`.
    static var name: String { get }

    /// The HTTP port when `http.port` is not set.
    static var defaultPort: Int { get }

    /// The migrations of the service's schema (`Settings.schema`), applied before the server
    /// starts. Default: none.
    static var migrations: [Migration] { get }

    /// The limits of the service's Postgres sessions. Default: ``PostgresSession/owning(_:)`` of
    /// its schema.
    static func postgresSession(_ settings: Settings) -> PostgresSession

    /// ``postgresSession(_:)`` with every setting at its default: what a deployment's roles
    /// carry for `postgres.role-settings` (`deploy/staging/postgres-roles.sql`). Default:
    /// ``PostgresSession/owning(_:)`` of ``defaultSchema``.
    static var defaultPostgresSession: PostgresSession? { get }

    /// Whether the NATS connection flushes every publish at once (latency over throughput; see
    /// the notes on nats.c). Default: `false`.
    static var natsSendAsap: Bool { get }

    /// The path prefixes the edge sends to the service (nginx prefix locations: the longest
    /// match wins, so `/v1/traces/` may go elsewhere than `/v1/traces`). Every path of the
    /// service's OpenAPI document must fall under one (`scripts/sync-services` checks).
    static var edgeRoutes: [String] { get }

    /// What the service's NATS user may publish and subscribe to beyond what every service may
    /// (``NATSPermissions/everyService(named:subjects:)``): its part of the bus contract, no
    /// wider. The deployments' NATS users are written from it (`swarmdeckd deploy`).
    static func natsPermissions(_ subjects: Subjects) -> NATSPermissions

    /// Whether the service reads ingest's event log: its deployments' Postgres role is then a
    /// member of `ingest_reader` (read-only on the log's tables). Default: `false`.
    static var readsEventLog: Bool { get }

    /// Builds the service from its dependencies: adds its routes to `assembly.router` (and its
    /// WebSocket routes to a router of its own, returned as ``ServiceParts/server``) and returns
    /// its background services, readiness checks and start-up work.
    static func assemble(_ assembly: ServiceAssembly<Settings>) async throws -> ServiceParts
}

extension SwarmdeckService {
    public static var migrations: [Migration] { [] }

    public static var natsSendAsap: Bool { false }

    public static var readsEventLog: Bool { false }

    /// The Postgres role the service logs in as in a deployment: its name with underscores
    /// (`stream_fanout`).
    public static var postgresRole: String {
        String(Self.name.map { $0 == "-" ? "_" : $0 })
    }

    /// The schema the service owns in a deployment: the default of its settings' schema key
    /// (the one key whose name ends in `.schema`, as `approvals.schema`); nil when it declares none.
    public static var defaultSchema: String? {
        let keys = Settings.keys.filter { $0.name.hasSuffix(".schema") }
        return keys.count == 1 ? keys[0].defaultValue : nil
    }

    public static func postgresSession(_ settings: Settings) -> PostgresSession {
        .owning(settings.schema)
    }

    public static var defaultPostgresSession: PostgresSession? {
        Self.defaultSchema.map(PostgresSession.owning)
    }

    /// The default of the setting `key`, as its documentation renders it; nil for a key the
    /// settings do not declare or one without a default.
    public static func defaultValue(of key: String) -> String? {
        Settings.keys.first { $0.name == key }?.defaultValue
    }

    /// Everything the service's NATS user may do: its own ``natsPermissions(_:)`` and what
    /// every service may.
    public static func allNATSPermissions(_ subjects: Subjects) -> NATSPermissions {
        Self.natsPermissions(subjects).merging(NATSPermissions.everyService(named: Self.name, subjects: subjects))
    }

    /// The keys of the service's own settings (beyond ``ServiceConfiguration/keys``).
    public static var settingsKeys: [SettingKey] { Settings.keys }
}

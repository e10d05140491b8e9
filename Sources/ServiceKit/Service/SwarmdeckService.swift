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

    /// Whether the NATS connection flushes every publish at once (latency over throughput; see
    /// the notes on nats.c). Default: `false`.
    static var natsSendAsap: Bool { get }

    /// Builds the service from its dependencies: adds its routes to `assembly.router` (and its
    /// WebSocket routes to a router of its own, returned as ``ServiceParts/server``) and returns
    /// its background services, readiness checks and start-up work.
    static func assemble(_ assembly: ServiceAssembly<Settings>) async throws -> ServiceParts
}

extension SwarmdeckService {
    public static var migrations: [Migration] { [] }

    public static var natsSendAsap: Bool { false }

    public static func postgresSession(_ settings: Settings) -> PostgresSession {
        .owning(settings.schema)
    }

    /// The keys of the service's own settings (beyond ``ServiceConfiguration/keys``).
    public static var settingsKeys: [SettingKey] { Settings.keys }
}

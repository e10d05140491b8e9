public import Contracts
import EventLog
import Hummingbird
public import ServiceKit

/// The stream-fanout service: live event streams to phones over WebSocket (`/v1/stream`) and
/// the ACP cache (`/v1/acp`), resumable by seq.
public enum StreamFanoutService: SwarmdeckService {
    public typealias Settings = FanoutSettings

    public static let name = "stream-fanout"
    public static let defaultPort = 8082
    public static var migrations: [Migration] { FanoutMigrations.all }

    public static let readsEventLog = true
    public static let edgeRoutes = ["/v1/stream", "/v1/acp"]

    /// It hears the live feed, announces which ACP threads devices watch and sends people's
    /// ACP frames to ingest (the one subject ingest stores as a client's).
    public static func natsPermissions(_ subjects: Subjects) -> NATSPermissions {
        NATSPermissions(publish: [subjects.allACPPresence, subjects.clientACPFrames], subscribe: [subjects.allEvents])
    }

    /// Reads of ingest's log name their schema; replays may scan, so statements get 10 s.
    public static func postgresSession(_ settings: FanoutSettings) -> PostgresSession {
        Self.session
    }

    public static var defaultPostgresSession: PostgresSession? { Self.session }

    /// It reads (names qualified with the schemas), whatever its settings.
    private static let session = PostgresSession(searchPath: nil, statementTimeout: .seconds(10))

    /// The tenant feeds (NATS, back-filled from ingest's log), the heartbeats, and the
    /// WebSocket routes behind an upgrade.
    public static func assemble(_ assembly: ServiceAssembly<FanoutSettings>) async throws -> ServiceParts {
        let settings = assembly.settings
        let logger = assembly.logger
        let eventLog = EventLogReader(client: assembly.postgres, schema: settings.eventLogSchema, logger: logger)
        let hub = FeedHub(
            nats: assembly.nats,
            subjects: assembly.subjects,
            reader: eventLog,
            tailCheckInterval: .seconds(settings.tailCheckSeconds),
            logger: logger
        )
        let heartbeats = WebSocketHeartbeats(revocations: assembly.revocations)
        let presence = ACPPresenceBoard(
            nats: assembly.nats,
            subjects: assembly.subjects,
            interval: .seconds(settings.acpPresenceSeconds),
            logger: logger
        )
        let controller = StreamController(
            authentication: WebSocketAuthentication(verifier: assembly.verifier, requiring: .streamRead),
            acpAuthentication: WebSocketAuthentication(verifier: assembly.verifier, requiring: .streamRead, .threadRead, acceptsAgentSessions: true),
            relay: ACPFrameRelay(
                reader: eventLog,
                sender: ServiceEventSender(connection: assembly.nats, subjects: assembly.subjects),
                maxFrameBytes: settings.maxClientFrameBytes,
                framesPerSecond: settings.clientFramesPerSecond,
                logger: logger
            ),
            hub: hub,
            reader: eventLog,
            replays: AsyncPermits(settings.maxConcurrentReplays),
            cache: ACPCache(client: assembly.postgres, eventLog: eventLog, schema: settings.schema, logger: logger),
            presence: presence,
            heartbeats: heartbeats,
            settings: settings,
            logger: logger,
            connections: TenantConnections(maxPerTenant: settings.maxConnectionsPerTenant)
        )
        var webSocketRoutes = WebSocketRoutes()
        controller.addStreamRoute(to: &webSocketRoutes)
        controller.addACPRoute(to: &webSocketRoutes)
        webSocketRoutes.addHTTPAnswers(to: assembly.router)
        return ServiceParts(
            services: [hub, heartbeats, presence],
            server: .webSocketUpgrade(routes: webSocketRoutes, maxMessageBytes: settings.maxMessageBytes, logger: logger)
        )
    }
}

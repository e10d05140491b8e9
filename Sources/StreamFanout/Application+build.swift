import Configuration
import Contracts
import Hummingbird
import HummingbirdWebSocket
import Logging
import PostgresNIO
import ServiceKit

/// Assembles stream-fanout: Postgres (ingest's event log, read-only; its own schema for ACP
/// acknowledgements, migrated before the server starts), NATS (the live feed), the tenant
/// feeds, the WebSocket routes and the operational routes.
func buildApplication(reader: ConfigReader) async throws -> some ApplicationProtocol {
    var logger = Logger(label: "stream-fanout")
    logger.logLevel = try reader.logLevel()
    let settings = try FanoutSettings(reader: reader)

    let migrator = try Migrator(schema: settings.schema, migrations: FanoutMigrations.all)
    var postgresConfiguration = try reader.postgresConfiguration()
    postgresConfiguration.options.additionalStartupParameters = [("statement_timeout", "10000")]
    postgresConfiguration.options.connectTimeout = .seconds(2)
    let postgres = PostgresClient(configuration: postgresConfiguration, backgroundLogger: logger)
    let nats = try await NATSConnection.connect(try reader.natsConfiguration(name: "stream-fanout"))

    let eventLog = EventLogReader(client: postgres, schema: settings.eventLogSchema, logger: logger)
    let hub = FeedHub(nats: nats, subjects: try reader.subjects(), reader: eventLog, tailCheckInterval: .seconds(settings.tailCheckSeconds), logger: logger)
    let heartbeats = Heartbeats()
    let controller = StreamController(
        verifier: try await reader.accessTokenVerifier(),
        hub: hub,
        reader: eventLog,
        cache: ACPCache(client: postgres, eventLogSchema: settings.eventLogSchema, schema: settings.schema, logger: logger),
        heartbeats: heartbeats,
        settings: settings,
        logger: logger
    )

    let router = Router.service()
    router.addOperationalRoutes(readiness: [.nats(nats), .postgres(postgres)])
    controller.addFallbackRoute(to: router)
    let webSocketRouter = Router(context: StreamRequestContext.self)
    controller.addWebSocketRoute(to: webSocketRouter)
    controller.addACPRoute(to: webSocketRouter)

    var application = Application(
        router: router,
        server: .http1WebSocketUpgrade(
            webSocketRouter: webSocketRouter,
            configuration: .init(ws: .init(maxFrameSize: settings.maxMessageBytes, autoPing: .disabled))
        ),
        configuration: try reader.applicationConfiguration(serverName: "stream-fanout", defaultPort: 8082),
        services: [postgres, NATSService(connection: nats), hub, heartbeats],
        logger: logger
    )
    application.beforeServerStarts { [logger] in
        try await migrator.migrate(postgres, logger: logger)
    }
    return application
}

import Configuration
import Contracts
import Foundation
import Hummingbird
import Logging
import OpenAPIHummingbird
import PostgresNIO
import ServiceKit

/// Assembles control-api: Postgres (its schema migrated before the server starts), NATS and
/// JetStream (the command stream prepared before it starts), the fleet index and its feed, the
/// command dispatcher, and the operations of openapi/control-api.yaml.
func buildApplication(reader: ConfigReader) async throws -> some ApplicationProtocol {
    var logger = Logger(label: "control-api")
    logger.logLevel = try reader.logLevel()
    let settings = try ControlSettings(reader: reader)
    let migrator = try Migrator(schema: settings.schema, migrations: ControlMigrations.all)

    var postgresConfiguration = try reader.postgresConfiguration()
    postgresConfiguration.options.additionalStartupParameters = [
        ("search_path", settings.schema),
        ("statement_timeout", "5000"),
        ("lock_timeout", "5000"),
        ("idle_in_transaction_session_timeout", "10000"),
    ]
    postgresConfiguration.options.connectTimeout = .seconds(2)
    let postgres = PostgresClient(configuration: postgresConfiguration, backgroundLogger: logger)

    // Commands are latency-sensitive: flush each publish at once (docs: notes on nats.c).
    let nats = try await NATSConnection.connect(try reader.natsConfiguration(name: "control-api", sendAsap: true))
    let subjects = try reader.subjects()
    let verifier = try await reader.accessTokenVerifier()
    let pem: String
    do {
        pem = try String(contentsOfFile: settings.privateKeyFile, encoding: .utf8)
    } catch {
        throw ServiceKitError(.configuration, "cannot read \(SettingKey.jwtPrivateKeyFile) \(settings.privateKeyFile): \(error)")
    }
    let signer = try await AccessTokenSigner(
        privateKeyPEM: pem,
        keyID: try reader.setting(.jwtKeyID),
        issuer: try reader.setting(.jwtIssuer),
        audience: try reader.setting(.jwtAudience)
    )

    let fleet = FleetIndex()
    let feed = FleetFeed(index: fleet, client: postgres, connection: nats, subjects: subjects, ingestSchema: settings.ingestSchema, logger: logger)
    let store = ControlStore(client: postgres, logger: logger)
    let bus = CommandBus(jetStream: JetStream(connection: nats), subjects: subjects, logger: logger)
    let dispatcher = CommandDispatcher(store: store, bus: bus, logger: logger)
    let handler = ControlAPIHandler(
        settings: settings,
        verifier: verifier,
        signer: signer,
        ingestKeys: IngestKeyVerifier(client: postgres, schema: settings.ingestSchema, logger: logger, cacheLifetime: .seconds(30), lookupTimeout: .seconds(5)),
        devices: DeviceAuthority(
            client: postgres,
            signer: signer,
            accessLifetime: .seconds(settings.accessTokenSeconds),
            refreshLifetime: .seconds(settings.refreshTokenDays * 86_400),
            logger: logger
        ),
        fleet: fleet,
        store: store,
        bus: bus,
        limiter: RateLimiter(perMinute: settings.controlsPerMinute)
    )

    let router = Router.service()
    router.addOperationalRoutes(readiness: [
        .nats(nats), .postgres(postgres), ReadinessCheck(name: "fleet") { feed.isLoaded },
    ])
    router.get("openapi.yaml") { _, _ in
        Response(status: .ok, headers: [.contentType: "application/yaml"], body: .init(byteBuffer: ByteBuffer(string: openAPIDocument)))
    }
    // For the routes registered after them: the operations.
    router.add(middleware: OpenAPIErrorMiddleware())
    router.add(middleware: RequestScopeMiddleware())
    try handler.registerHandlers(on: router)

    var application = Application(
        router: router,
        configuration: try reader.applicationConfiguration(serverName: "control-api", defaultPort: 8083),
        services: [postgres, NATSService(connection: nats), feed, dispatcher],
        logger: logger
    )
    application.beforeServerStarts { [logger] in
        try await migrator.migrate(postgres, logger: logger)
        try await bus.prepare()
    }
    return application
}

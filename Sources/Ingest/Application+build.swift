import Configuration
import Contracts
import Hummingbird
import Logging
import PostgresNIO
import ServiceKit

extension SettingKey {
    static let ingestSchema = SettingKey("ingest.schema", "the Postgres schema ingest owns", default: "ingest")
}

/// Assembles the ingest service: Postgres (its schema migrated before the server starts),
/// NATS, the group-commit writer, partition maintenance, the native, ACP and OTLP routes.
func buildApplication(reader: ConfigReader) async throws -> some ApplicationProtocol {
    var logger = Logger(label: "ingest")
    logger.logLevel = try reader.logLevel()
    let settings = try IngestSettings(reader: reader)
    let schema: String = try reader.setting(.ingestSchema)
    let migrator = try Migrator(schema: schema, migrations: IngestMigrations.all)

    var postgresConfiguration = try reader.postgresConfiguration()
    // Unqualified table names resolve to the service's own schema.
    // Server-side limits matching the commit deadline: postgres-nio does not cancel a running
    // query, so a lock wait or a stuck statement must end on the server's side.
    let statementMilliseconds = String(settings.commitTimeoutSeconds * 1000)
    postgresConfiguration.options.additionalStartupParameters = [
        ("search_path", schema),
        ("statement_timeout", statementMilliseconds),
        ("lock_timeout", statementMilliseconds),
        ("idle_in_transaction_session_timeout", String(settings.commitTimeoutSeconds * 2000)),
    ]
    // Fail fast when Postgres is down, so clients get 503 instead of a long wait.
    postgresConfiguration.options.connectTimeout = .seconds(2)
    let postgres = PostgresClient(configuration: postgresConfiguration, backgroundLogger: logger)

    let nats = try await NATSConnection.connect(try reader.natsConfiguration(name: "ingest"))
    let publisher = EventPublisher(connection: nats, subjects: try reader.subjects(), logger: logger)
    let eventLog = EventLog(client: postgres, logger: logger)
    let retention = EventLogRetention(client: postgres, retentionDays: settings.retentionDays, logger: logger)
    let writer = EventLogWriter(log: eventLog, publisher: publisher, settings: settings, logger: logger)
    let keys = IngestKeyStore(
        client: postgres,
        schema: schema,
        logger: logger,
        cacheLifetime: .seconds(settings.keyCacheSeconds),
        lookupTimeout: .seconds(settings.commitTimeoutSeconds)
    )
    let controller = IngestController(
        keys: keys,
        writer: writer,
        log: eventLog,
        settings: settings,
        verifier: try await reader.accessTokenVerifier()
    )
    let otlp = OTLPReceiver(keys: keys, writer: writer, settings: settings)

    let router = Router.service()
    router.addOperationalRoutes(readiness: [.nats(nats), .postgres(postgres)])
    controller.addRoutes(to: router)
    otlp.addRoutes(to: router)

    var application = Application(
        router: router,
        configuration: try reader.applicationConfiguration(serverName: "ingest", defaultPort: 8081),
        services: [postgres, NATSService(connection: nats), retention],
        logger: logger
    )
    application.beforeServerStarts { [logger] in
        try await migrator.migrate(postgres, logger: logger)
        try await retention.maintain()
    }
    return application
}

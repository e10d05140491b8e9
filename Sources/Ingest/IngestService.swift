public import Contracts
import EventLog
public import ServiceKit

/// The ingest service: agent telemetry in (native batches, OTLP/HTTP, ACP frames), the event
/// log, the live feed out.
public enum IngestService: SwarmdeckService {
    public typealias Settings = IngestSettings

    public static let name = "ingest"
    public static let defaultPort = 8081
    public static var migrations: [Migration] { EventLogMigrations.all }

    public static let edgeRoutes = ["/v1/ingest", "/v1/admin/ingest-keys", "/v1/traces", "/v1/logs", "/v1/metrics"]

    /// It publishes the live feed and the ACP threads' advances (owning the ACP stream), and
    /// answers the services' events and people's ACP frames after commit.
    public static func natsPermissions(_ subjects: Subjects) -> NATSPermissions {
        NATSPermissions(
            publish: [subjects.allEvents, subjects.allACPAdvances] + NATSPermissions.owning(stream: subjects.acpStreamName),
            subscribe: [subjects.serviceEvents, subjects.clientACPFrames],
            allowResponses: true
        )
    }

    /// Statements, lock waits and idle transactions end with the commit deadline, so a stuck
    /// group commit answers 503 rather than hanging.
    public static func postgresSession(_ settings: IngestSettings) -> PostgresSession {
        Self.postgresSession(schema: settings.schema, commitTimeoutSeconds: settings.commitTimeoutSeconds)
    }

    public static var defaultPostgresSession: PostgresSession? {
        guard let schema = Self.defaultSchema, let timeout = Self.defaultValue(of: "ingest.commit-timeout-seconds").flatMap({ Int($0) })
        else { return nil }
        return Self.postgresSession(schema: schema, commitTimeoutSeconds: timeout)
    }

    /// Statements and lock waits end at the commit deadline, a transaction left idle at twice it.
    private static func postgresSession(schema: String, commitTimeoutSeconds: Int) -> PostgresSession {
        let deadline = Duration.seconds(commitTimeoutSeconds)
        return PostgresSession(searchPath: schema, statementTimeout: deadline, lockTimeout: deadline, idleInTransactionTimeout: deadline * 2)
    }

    /// The group-commit writers (bulk and priority lanes) and the live feed publisher, partition
    /// maintenance, the native, ACP and OTLP routes, and the services' event intake.
    public static func assemble(_ assembly: ServiceAssembly<IngestSettings>) async throws -> ServiceParts {
        let settings = assembly.settings
        let logger = assembly.logger
        let publisher = EventPublisher(connection: assembly.nats, subjects: assembly.subjects, batches: settings.busBatches, logger: logger)
        let eventLog = EventLogAppender(client: assembly.postgres, dedupWindow: .seconds(settings.dedupWindowHours * 3600), logger: logger)
        let retention = EventLogRetention(client: assembly.postgres, retentionDays: settings.retentionDays, logger: logger)
        let rate = TenantEventRate(settings: settings, client: assembly.postgres, logger: logger)
        let writer = EventLogWriter(log: eventLog, publisher: publisher, settings: settings, rate: rate, logger: logger)
        let priority = EventLogWriter(log: eventLog, publisher: publisher, settings: settings, lane: .priority, logger: logger)
        let keys = IngestKeyStore(
            client: assembly.credentialPostgres,
            schema: settings.schema,
            logger: logger,
            cacheLifetime: .seconds(settings.keyCacheSeconds),
            lookupTimeout: .seconds(settings.commitTimeoutSeconds)
        )
        let parsing = ByteBudget(limit: settings.maxParsingBytes)
        let controller = IngestController(
            keys: keys,
            writer: writer,
            priority: priority,
            log: EventLogReader(client: assembly.postgres, schema: settings.schema, logger: logger),
            settings: settings,
            verifier: assembly.verifier,
            parsing: parsing,
            rate: rate,
            stateRate: .stateEvents(settings: settings, client: assembly.postgres, logger: logger)
        )
        controller.addRoutes(to: assembly.router)
        OTLPReceiver(
            keys: keys,
            writer: writer,
            settings: settings,
            rate: rate,
            memory: controller.memory(maxBodyBytes: settings.maxBodyBytes)
        )
        .addRoutes(to: assembly.router)
        let intake = ServiceEventIntake(
            connection: assembly.nats,
            subjects: assembly.subjects,
            writer: priority,
            maxEventBytes: settings.maxEventBytes,
            maxACPBodyBytes: settings.maxACPBodyBytes,
            logger: logger
        )
        // ACP threads' advances are kept a while in a stream of their own, for the notifier's
        // silent pushes (a durable consumer).
        let jetStream = assembly.jetStream
        let acpStream = StreamConfiguration(
            name: assembly.subjects.acpStreamName,
            subjects: [assembly.subjects.allACPAdvances],
            maxBytes: Int64(settings.acpStreamMaxBytes),
            maxMessagesPerSubject: Int64(settings.acpStreamMaxPerTenant),
            maxAge: .seconds(settings.acpStreamMaxAgeSeconds)
        )
        return ServiceParts(
            services: [retention, intake],
            readiness: intake.readiness,
            beforeServerStarts: [{ try await retention.maintain() }, { try await jetStream.createOrUpdateStream(acpStream) }]
        )
    }
}

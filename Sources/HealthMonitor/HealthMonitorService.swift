public import Contracts
import EventLog
import Foundation
import HealthMonitorContract
import Hummingbird
import OpenAPIHummingbird
public import ServiceKit

/// Health-monitor: context, skill and swarm health from every tenant's events, and incidents
/// that open and resolve themselves (see openapi/health-monitor.yaml and
/// docs/health-monitor.md).
public enum HealthMonitorService: SwarmdeckService {
    public typealias Settings = HealthSettings

    public static let name = "health-monitor"
    public static let defaultPort = 8085
    public static var migrations: [Migration] { HealthMigrations.all }

    public static let readsEventLog = true
    public static let edgeRoutes = ["/v1/context-health", "/v1/skill-health", "/v1/swarm-health", "/v1/incidents", "/v1/alert-thresholds"]

    /// It hears the live feed (subscribing per partition held), publishes incident changes (owning the incidents stream), sends
    /// its events to ingest, answers health summaries and tells its replicas of threshold
    /// changes.
    public static func natsPermissions(_ subjects: Subjects) -> NATSPermissions {
        NATSPermissions(
            publish: [subjects.allIncidentChanges, subjects.serviceEvents, subjects.allHealthThresholdChanges]
                + NATSPermissions.owning(stream: subjects.incidentStreamName),
            subscribe: [subjects.allEvents, subjects.healthSummary, subjects.allHealthThresholdChanges],
            allowResponses: true
        )
    }
    /// An incident is news: each publish is flushed at once.
    public static let natsSendAsap = true

    /// The engine and its feed, the outbox, the threshold notices, the summary responder, and
    /// the operations of openapi/health-monitor.yaml.
    public static func assemble(_ assembly: ServiceAssembly<HealthSettings>) async throws -> ServiceParts {
        let settings = assembly.settings
        let logger = assembly.logger
        let messages = IncidentMessages(webBaseURL: settings.webBaseURL)
        let incidents = IncidentStore(client: assembly.postgres, messages: messages, logger: logger)
        let thresholds = ThresholdStore(client: assembly.postgres, logger: logger)
        let rollups = RollupStore(client: assembly.postgres, logger: logger)
        let engine = HealthEngine(settings: settings)
        let jetStream = assembly.jetStream
        let outbox = HealthOutbox(client: assembly.postgres, jetStream: jetStream, subjects: assembly.subjects, logger: logger)
        let feed = HealthFeed(
            engine: engine,
            eventLog: EventLogReader(client: assembly.postgres, schema: settings.ingestSchema, logger: logger),
            incidents: incidents,
            thresholds: thresholds,
            rollups: rollups,
            outbox: outbox,
            connection: assembly.nats,
            subjects: assembly.subjects,
            settings: settings,
            leases: PartitionLeases(
                store: PartitionLeaseStore(client: assembly.postgres, logger: logger),
                ttl: .seconds(settings.leaseSeconds),
                logger: logger
            ),
            logger: logger
        )
        let notices = ThresholdNotices(connection: assembly.nats, subjects: assembly.subjects, store: thresholds, engine: engine, logger: logger)
        let summaries = HealthSummaryResponder(
            connection: assembly.nats,
            subjects: assembly.subjects,
            incidents: incidents,
            rollups: rollups,
            messages: messages,
            logger: logger
        )
        let handler = HealthHandler(
            settings: settings,
            rollups: rollups,
            incidents: incidents,
            thresholds: thresholds,
            messages: messages,
            notices: notices,
            thresholdWrites: KeyedTokenBuckets(perMinute: settings.thresholdWritesPerMinute)
        )

        try assembly.router.addOpenAPIOperations(
            document: openAPIDocument,
            trustedProxies: settings.trustedProxies,
            authentication: OperationAuthenticationMiddleware(security: operationSecurity, verifier: assembly.verifier)
        ) { try handler.registerHandlers(on: assembly.router, middlewares: $0) }

        return ServiceParts(
            services: [outbox, feed, notices, summaries],
            readiness: [ReadinessCheck(name: "windows") { feed.isReady }, summaries.responder.readiness],
            beforeServerStarts: [{ try await outbox.prepare() }]
        )
    }
}

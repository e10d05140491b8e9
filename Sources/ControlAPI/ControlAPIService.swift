import AgentChannelContract
public import Contracts
import ControlAPIContract
import EventLog
import Foundation
import Hummingbird
import OpenAPIHummingbird
public import ServiceKit

/// Control-api: operators sign in, read the fleet and steer it; agents fetch their commands.
public enum ControlAPIService: SwarmdeckService {
    public typealias Settings = ControlSettings

    public static let name = "control-api"
    public static let defaultPort = 8083
    public static var migrations: [Migration] { ControlMigrations.all }

    public static let readsEventLog = true
    public static let edgeRoutes = [
        "/v1/auth", "/v1/admin/enrolment-codes", "/v1/admin/devices", "/v1/traces/", "/v1/overview", "/v1/swarms", "/v1/agents", "/v1/workers",
        "/api/runtime/codex/workers", "/v1/controls", "/v1/audit", "/v1/agent", "/.well-known/jwks.json", "/openapi.yaml",
    ]

    /// It publishes commands and revocations, asks health-monitor for summaries, manages
    /// JetStream at large (the control stream, read by subject for the agents' queues), hears
    /// the commands of agents whose polls wait, and answers a service-agent's command outcomes.
    /// It hears no event: the fleet is a table ingest keeps.
    public static func natsPermissions(_ subjects: Subjects) -> NATSPermissions {
        NATSPermissions(
            publish: [
                subjects.allControlCommands, subjects.allRevocations, subjects.healthSummary, JetStreamOperation.all(),
            ],
            // The commands: a waiting poll hears its agent's subject, to read the stream again.
            subscribe: [subjects.serviceControlAcks, subjects.allControlCommands],
            allowResponses: true
        )
    }
    /// Where the agents' channel's document (openapi/agent-channel.yaml) is served, under its
    /// operations' prefix so the edge routes it here.
    public static let agentChannelDocumentPath = "v1/agent/openapi.yaml"

    /// Commands are latency-sensitive: each publish is flushed at once (notes on nats.c).
    public static let natsSendAsap = true

    /// The token signer, the fleet index, the command bus (its stream prepared
    /// before the server starts) and dispatcher, the services' acknowledgements, and the operations of its two documents:
    /// the operators' (openapi/control-api.yaml) and the agents' channel (openapi/agent-channel.yaml).
    public static func assemble(_ assembly: ServiceAssembly<ControlSettings>) async throws -> ServiceParts {
        let settings = assembly.settings
        let logger = assembly.logger
        let postgres = assembly.postgres
        let signer = try await AccessTokenSigner(
            privateKeyPEM: settings.privateKeyPEM,
            keyID: assembly.common.jwtKeyID,
            issuer: assembly.common.jwtIssuer,
            audience: assembly.common.jwtAudience
        )

        let eventLog = EventLogReader(client: postgres, schema: settings.ingestSchema, logger: logger)
        let fleet = FleetIndex(eventLog: eventLog, maxAgentsPerTenant: settings.maxAgentsPerTenant)
        let store = ControlStore(client: postgres, logger: logger)
        let bus = CommandBus(
            jetStream: assembly.jetStream,
            subjects: assembly.subjects,
            queues: AgentQueues(client: postgres, ackWait: CommandBus.ackWait, logger: logger),
            handles: AckHandle(secret: Array(settings.privateKeyPEM.utf8)),
            maxPollsPerTenant: settings.maxAgentSessions,
            maxBytes: settings.commandStreamMaxBytes,
            maxPerAgent: settings.commandStreamMaxPerAgent,
            logger: logger
        )
        let dispatcher = CommandDispatcher(store: store, bus: bus, logger: logger)
        let oidc = settings.oidc.map { oidc in
            OIDCSignIn(settings: oidc, provider: OIDCProvider(settings: oidc, logger: logger), logins: OIDCLogins(client: postgres, logger: logger))
        }
        let revocations = RevocationBus(jetStream: assembly.jetStream, subjects: assembly.subjects, retention: .seconds(86_400))
        let views = FleetViews(offlineAfter: TimeInterval(settings.offlineSeconds), webBaseURL: settings.webBaseURL)
        let operators = ControlAPIHandler(
            auth: AuthHandler(
                signer: signer,
                devices: DeviceAuthority(
                    client: postgres,
                    signer: signer,
                    accessLifetime: .seconds(settings.accessTokenSeconds),
                    refreshLifetime: .seconds(settings.refreshTokenDays * 86_400),
                    familyLifetime: .seconds(settings.signInDays * 86_400),
                    logger: logger
                ),
                oidc: oidc,
                revocations: revocations,
                authLimiter: KeyedTokenBuckets(perMinute: settings.authPerMinute),
                signIns: PostgresTokenBuckets(
                    client: postgres,
                    table: AuthHandler.signInBucketsTable,
                    perMinute: settings.authPerMinute,
                    logger: logger
                ),
                logger: logger
            ),
            fleet: FleetHandler(
                fleet: fleet,
                eventLog: eventLog,
                store: store,
                health: HealthSummaries(connection: assembly.nats, subjects: assembly.subjects, logger: logger),
                views: views
            ),
            controls: ControlsHandler(
                settings: settings,
                fleet: fleet,
                store: store,
                bus: bus,
                views: views,
                limiter: KeyedTokenBuckets(perMinute: settings.controlsPerMinute),
                tenantLimiter: KeyedTokenBuckets(perMinute: settings.controlsPerTenantPerMinute)
            )
        )
        let ingestKeys = IngestKeyVerifier(
            client: assembly.credentialPostgres,
            schema: settings.ingestSchema,
            logger: logger,
            cacheLifetime: .seconds(min(30, settings.agentSessionCheckSeconds)),
            lookupTimeout: .seconds(5)
        )
        let agents = AgentChannelHandler(
            settings: settings,
            signer: signer,
            ingestKeys: ingestKeys,
            revocations: revocations,
            store: store,
            bus: bus,
            sessionsSeen: SessionTouches(interval: .seconds(settings.agentSessionCheckSeconds)),
            sessionOpens: KeyedTokenBuckets(perMinute: settings.agentSessionsPerMinute),
            logger: logger
        )

        // Two documents, one credential table: their operation ids are distinct (a repeat traps here).
        let security = Dictionary(
            uniqueKeysWithValues: Array(ControlAPIContract.operationSecurity) + Array(AgentChannelContract.operationSecurity)
        )
        try assembly.router.addOpenAPIOperations(
            document: ControlAPIContract.openAPIDocument,
            otherDocuments: [Self.agentChannelDocumentPath: AgentChannelContract.openAPIDocument],
            trustedProxies: settings.trustedProxies,
            authentication: OperationAuthenticationMiddleware(security: security, verifier: assembly.verifier, agentKeys: ingestKeys)
        ) { middlewares in
            try operators.registerHandlers(on: assembly.router, middlewares: middlewares)
            try agents.registerHandlers(on: assembly.router, middlewares: middlewares)
        }

        let serviceAcks = ServiceAckIntake(store: store, connection: assembly.nats, subjects: assembly.subjects, logger: logger)
        return ServiceParts(
            services: [dispatcher, serviceAcks] + (oidc.map { [$0.provider] } ?? []),
            readiness: [serviceAcks.responder.readiness],
            beforeServerStarts: [{ try await bus.prepare() }, { try await revocations.prepare() }]
        )
    }
}

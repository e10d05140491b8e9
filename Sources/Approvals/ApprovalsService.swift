import ApprovalsContract
public import Contracts
import Foundation
import Hummingbird
import OpenAPIHummingbird
public import ServiceKit

/// Approvals: agents open gates, people decide them, agents hear the outcome on their command
/// channel (see openapi/approvals.yaml and docs/approvals.md).
public enum ApprovalsService: SwarmdeckService {
    public typealias Settings = ApprovalsSettings

    public static let name = "approvals"
    public static let defaultPort = 8084
    public static var migrations: [Migration] { ApprovalsMigrations.all }

    public static let edgeRoutes = ["/v1/approval-gates", "/v1/agent/gates"]

    /// It publishes gate outcomes into the control stream and gate openings (owning the gates
    /// stream), sends its events to ingest, pulls its one consumer of the control stream (the
    /// terminations), hears ACP messages and answers services' gate requests.
    public static func natsPermissions(_ subjects: Subjects) -> NATSPermissions {
        NATSPermissions(
            publish: [subjects.allControlCommands, subjects.allGateOpenings, subjects.serviceEvents]
                + NATSPermissions.owning(stream: subjects.gateStreamName)
                + NATSPermissions.pulling(stream: subjects.controlStreamName, consumer: TerminationWatcher.consumerName),
            subscribe: [subjects.allACPEvents, subjects.serviceGateRequests],
            allowResponses: true
        )
    }
    /// A decision is what an agent waits for: each publish is flushed at once.
    public static let natsSendAsap = true

    /// The store, the outbox and its relay, the expiry sweep, the termination and ACP
    /// permission watchers, the services' gate requests, and the operations of openapi/approvals.yaml.
    public static func assemble(_ assembly: ServiceAssembly<ApprovalsSettings>) async throws -> ServiceParts {
        let settings = assembly.settings
        let logger = assembly.logger
        let messages = GateMessages(webBaseURL: settings.webBaseURL)
        let store = GateStore(client: assembly.postgres, messages: messages, logger: logger)
        let outbox = GateOutbox(
            client: assembly.postgres,
            jetStream: assembly.jetStream,
            subjects: assembly.subjects,
            logger: logger
        )
        let expiry = GateExpiry(store: store, outbox: outbox, allows: settings.expiryAllows, logger: logger)
        let terminations = TerminationWatcher(
            store: store,
            outbox: outbox,
            jetStream: assembly.jetStream,
            subjects: assembly.subjects,
            logger: logger
        )
        let opens = KeyedTokenBuckets(perMinute: settings.opensPerMinute)
        let permissions = ACPPermissionWatcher(
            store: store,
            outbox: outbox,
            connection: assembly.nats,
            subjects: assembly.subjects,
            settings: settings,
            opens: opens,
            logger: logger
        )
        let serviceGates = ServiceGateIntake(
            store: store,
            outbox: outbox,
            connection: assembly.nats,
            subjects: assembly.subjects,
            settings: settings,
            opens: opens,
            logger: logger
        )
        let handler = ApprovalsHandler(
            settings: settings,
            store: store,
            outbox: outbox,
            messages: messages,
            opens: opens,
            reasks: KeyedTokenBuckets(perMinute: settings.opensPerMinute * 10),
            decisions: KeyedTokenBuckets(perMinute: settings.decisionsPerMinute)
        )

        try assembly.router.addOpenAPIOperations(
            document: openAPIDocument,
            trustedProxies: settings.trustedProxies,
            authentication: OperationAuthenticationMiddleware(security: operationSecurity, verifier: assembly.verifier)
        ) { try handler.registerHandlers(on: assembly.router, middlewares: $0) }

        return ServiceParts(
            services: [outbox, expiry, terminations, permissions, serviceGates],
            readiness: [serviceGates.responder.readiness],
            beforeServerStarts: [{ try await outbox.prepare() }]
        )
    }
}

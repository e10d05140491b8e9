import Anthropic
import AsyncHTTPClient
public import Contracts
import Foundation
import Hummingbird
import NIOPosix
import OpenAPIHummingbird
import PipelineRunnerContract
public import ServiceKit
import ServiceLifecycle

/// pipeline-runner: seed 001's multi-stage LLM pipelines (planner → researcher → producer → QA
/// reviewer), run server-side as agents the phone watches, gates and steers
/// (`docs/pipeline-runner.md`). It owns the schema `pipeline`; stages call the Anthropic
/// Messages API (or the local provider); gates go through approvals, events through ingest's
/// service lane, and control-api's commands reach it on the control stream.
public enum PipelineRunnerService: SwarmdeckService {
    public typealias Settings = PipelineSettings

    public static let name = "pipeline-runner"
    public static let defaultPort = 8088
    public static var migrations: [Migration] { PipelineMigrations.all }

    public static let edgeRoutes = ["/v1/pipelines"]

    /// It sends its pipelines' events, gate requests and command outcomes, pulls its one
    /// consumer of the control stream and tells its replicas of changes.
    public static func natsPermissions(_ subjects: Subjects) -> NATSPermissions {
        NATSPermissions(
            publish: [subjects.serviceEvents, subjects.serviceGateRequests, subjects.serviceControlAcks, subjects.pipelineChanged]
                + NATSPermissions.pulling(stream: subjects.controlStreamName, consumer: PipelineCommands.consumerName),
            subscribe: [subjects.pipelineChanged]
        )
    }

    public static func assemble(_ assembly: ServiceAssembly<PipelineSettings>) async throws -> ServiceParts {
        let settings = assembly.settings
        let logger = assembly.logger
        let store = PipelineStore(client: assembly.postgres, logger: logger)
        // A client of its own: redirects refused (the key must never follow one to another
        // origin), enough connections for every running stage and the planners, no read timeout
        // shorter than a call's deadline.
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(Int64(settings.anthropicTimeoutSeconds)))
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: settings.maxRunning + 32)
        let http = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
        let provider = AnthropicClient(
            baseURL: settings.anthropicBaseURL,
            apiKey: settings.anthropicKey,
            httpClient: http,
            maxRetries: settings.anthropicMaxRetries,
            timeout: .seconds(settings.anthropicTimeoutSeconds),
            logger: logger
        )
        let events = PipelineEvents(
            sender: ServiceEventSender(connection: assembly.nats, subjects: assembly.subjects),
            swarm: settings.swarm,
            logger: logger
        )
        let worker = PipelineWorker(
            store: store,
            provider: provider,
            fetcher: ResearchFetcher(
                policy: AddressPolicy(allowPrivate: settings.researchAllowPrivate),
                timeout: .seconds(settings.researchTimeoutSeconds),
                maxCharacters: settings.researchMaxCharacters,
                logger: logger
            ),
            events: events,
            gates: GateRequests(connection: assembly.nats, subjects: assembly.subjects),
            exporter: settings.exportDirectory.map { ArtifactExporter(directory: URL(fileURLWithPath: $0)) },
            settings: settings,
            owner: "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)-" + randomHex(bytes: 4),
            logger: logger
        )
        let scheduler = PipelineScheduler(
            store: store,
            worker: worker,
            connection: assembly.nats,
            subjects: assembly.subjects,
            settings: settings,
            logger: logger
        )
        let commands = PipelineCommands(
            store: store,
            events: events,
            jetStream: assembly.jetStream,
            connection: assembly.nats,
            subjects: assembly.subjects,
            swarm: settings.swarm,
            logger: logger
        )
        let handler = PipelineHandler(
            store: store,
            provider: provider,
            events: events,
            settings: settings,
            creates: KeyedTokenBuckets(perMinute: settings.createsPerMinute),
            sharedCreates: PostgresTokenBuckets(
                client: assembly.postgres,
                table: PipelineHandler.creationBucketsTable,
                perMinute: settings.createsPerMinute,
                logger: logger
            ),
            planning: PlannerCalls(perTenant: PlannerCalls.defaultPerTenant),
            started: { scheduler.wakeUps.kick() }
        )
        if settings.anthropicKey == nil {
            logger.warning("no provider API key (pipeline.anthropic.api-key-file): every pipeline fails with ProviderKeyMissing")
        }
        logger.info("provider", metadata: ["base-url": "\(settings.anthropicBaseURL)", "key": "\(settings.anthropicKey == nil ? "none" : "set")"])
        try assembly.router.addOpenAPIOperations(
            document: openAPIDocument,
            trustedProxies: settings.trustedProxies,
            authentication: OperationAuthenticationMiddleware(security: operationSecurity, verifier: assembly.verifier)
        ) {
            // Stage timings to the millisecond (the default date format drops fractions).
            try handler.registerHandlers(on: assembly.router, configuration: .init(dateTranscoder: .iso8601WithFractionalSeconds), middlewares: $0)
        }
        // Services stop in reverse order: the client last, once no run can call it.
        return ServiceParts(services: [ReleaseAtShutdown { try await http.shutdown() }, scheduler, commands])
    }
}

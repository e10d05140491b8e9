import APNs
public import Contracts
import Foundation
import Hummingbird
import NotifierContract
import OpenAPIHummingbird
public import ServiceKit

/// Notifier: pushes incidents and approval gates to phones through APNs, durably, coalesced
/// and rate-limited per device (see openapi/notifier.yaml and docs/notifier.md).
public enum NotifierService: SwarmdeckService {
    public typealias Settings = NotifierSettings

    public static let name = "notifier"
    public static let defaultPort = 8086
    public static var migrations: [Migration] { NotifierMigrations.all }

    public static let edgeRoutes = ["/v1/devices/me/push", "/v1/devices/me/notification-preferences"]

    /// It pulls its three consumers (incident changes, gate openings, ACP advances) and hears
    /// which ACP threads devices watch live.
    public static func natsPermissions(_ subjects: Subjects) -> NATSPermissions {
        NATSPermissions(
            publish: [NoticeConsumer.Source.incidents, .gates].flatMap {
                NATSPermissions.pulling(stream: $0.streamName(subjects), consumer: $0.consumerName)
            }
                + NATSPermissions.pulling(stream: subjects.acpStreamName, consumer: ACPAdvanceConsumer.consumerName),
            subscribe: [subjects.allACPPresence]
        )
    }

    /// The stores, the APNs client and the sender, the two notice consumers, the ACP stream's
    /// consumer and the ACP presence it checks, the revocation sweep, and the operations of
    /// openapi/notifier.yaml.
    public static func assemble(_ assembly: ServiceAssembly<NotifierSettings>) async throws -> ServiceParts {
        let settings = assembly.settings
        let logger = assembly.logger
        let devices = DeviceStore(client: assembly.postgres, logger: logger)
        let jobs = JobStore(client: assembly.postgres, settings: settings, logger: logger)
        let token = try APNsProviderToken(pem: settings.apnsKeyPEM, keyID: settings.apnsKeyID, teamID: settings.apnsTeamID)
        var urls = Dictionary(uniqueKeysWithValues: APNsEnvironment.allCases.map { ($0, $0.appleURL) })
        if let url = settings.apnsURL { urls = Dictionary(uniqueKeysWithValues: APNsEnvironment.allCases.map { ($0, url) }) }
        let apns = try APNsClient(
            providerToken: token,
            configuration: .init(
                urls: urls,
                timeout: .milliseconds(settings.apnsTimeoutMilliseconds),
                additionalCertificateAuthorityPEM: settings.apnsCertificateAuthorityPEM
            ),
            logger: logger
        )
        let presence = ACPPresenceMap(
            nats: assembly.nats,
            subjects: assembly.subjects,
            maxConnections: settings.maxPresenceConnections,
            logger: logger
        )
        let sender = PushSender(jobs: jobs, apns: apns, revocations: assembly.revocations, presence: presence, settings: settings, logger: logger)
        let consumers = [NoticeConsumer.Source.incidents, .gates].map { source in
            NoticeConsumer(
                source: source,
                jobs: jobs,
                sender: sender,
                jetStream: assembly.jetStream,
                subjects: assembly.subjects,
                settings: settings,
                logger: logger
            )
        }
        let acp = ACPAdvanceConsumer(
            jobs: jobs,
            sender: sender,
            jetStream: assembly.jetStream,
            subjects: assembly.subjects,
            settings: settings,
            logger: logger
        )
        let sweep = RevocationSweep(devices: devices, jobs: jobs, revocations: assembly.revocations, interval: .seconds(2), logger: logger)
        let handler = NotifierHandler(settings: settings, devices: devices, writes: KeyedTokenBuckets(perMinute: 30))

        try assembly.router.addOpenAPIOperations(
            document: openAPIDocument,
            trustedProxies: settings.trustedProxies,
            authentication: OperationAuthenticationMiddleware(security: operationSecurity, verifier: assembly.verifier)
        ) { try handler.registerHandlers(on: assembly.router, middlewares: $0) }

        // The group stops services in reverse order: the APNs client last, once nothing sends.
        return ServiceParts(services: [ReleaseAtShutdown { try await apns.shutdown() }, presence, sender, sweep, acp] + consumers)
    }
}

public import Contracts
import Crypto
import Foundation
import Hummingbird
import NIOPosix
import OpenAPIHummingbird
public import ServiceKit
import ServiceLifecycle
import TerminalBrokerContract

/// terminal-broker: agents' tmux sessions on the phone over SSH, read-only unless asked
/// (`docs/terminal-broker.md`). It owns the registered hosts, their pinned host keys and the
/// audit trail; it attaches each watched session once and shares it among the phones watching.
public enum TerminalBrokerService: SwarmdeckService {
    public typealias Settings = TerminalSettings

    public static let name = "terminal-broker"
    public static let defaultPort = 8087
    public static var migrations: [Migration] { TerminalMigrations.all }

    public static let edgeRoutes = ["/v1/terminal"]

    /// Nothing beyond what every service may: it hears revocations (and closes a revoked
    /// device's attaches).
    public static func natsPermissions(_ subjects: Subjects) -> NATSPermissions {
        NATSPermissions()
    }

    public static func assemble(_ assembly: ServiceAssembly<TerminalSettings>) async throws -> ServiceParts {
        let settings = assembly.settings
        let logger = assembly.logger
        let key = try OpenSSHPrivateKey(openSSH: settings.keyText)
        let store = HostStore(client: assembly.postgres, logger: logger)
        let keys = TenantSSHKeys(brokerKey: key)
        let pool = SSHHostPool(
            keys: keys,
            policy: settings.addressPolicy,
            store: store,
            group: MultiThreadedEventLoopGroup.singleton,
            timeout: .seconds(settings.connectTimeoutSeconds),
            maxBackoff: .seconds(settings.maxBackoffSeconds),
            logger: logger
        )
        let recordings = TerminalRecordings(
            directory: URL(fileURLWithPath: settings.recordingsDirectory),
            maxBytes: settings.maxRecordingBytes,
            maxTenantBytes: settings.maxTenantRecordingBytes,
            retention: .seconds(settings.recordingRetentionDays * 86_400)
        )
        let attachments = TerminalAttachments(
            pool: pool,
            replayBytes: settings.replayBytes,
            maxViewers: settings.maxViewersPerSession,
            recordings: recordings,
            maxPerTenant: settings.maxAttachesPerTenant,
            logger: logger
        )
        let heartbeats = WebSocketHeartbeats(revocations: assembly.revocations)
        let handler = TerminalHandler(store: store, pool: pool, recordings: recordings, settings: settings, keys: keys)
        try assembly.router.addOpenAPIOperations(
            document: openAPIDocument,
            trustedProxies: settings.trustedProxies,
            authentication: OperationAuthenticationMiddleware(security: operationSecurity, verifier: assembly.verifier)
        ) { try handler.registerHandlers(on: assembly.router, middlewares: $0) }
        let controller = TerminalController(
            store: store,
            attachments: attachments,
            verifier: assembly.verifier,
            heartbeats: heartbeats,
            settings: settings,
            logger: logger
        )
        var webSocketRoutes = WebSocketRoutes()
        controller.addWebSocketRoute(to: &webSocketRoutes)
        webSocketRoutes.addHTTPAnswers(to: assembly.router)
        return ServiceParts(
            services: [
                heartbeats, RecordingSweep(recordings: recordings, logger: logger),
                // Every session detached and every SSH connection closed when the service stops.
                ReleaseAtShutdown {
                    await attachments.closeAll()
                    await pool.shutdown()
                },
            ],
            server: .webSocketUpgrade(routes: webSocketRoutes, maxMessageBytes: settings.maxInputBytes + 256, logger: logger)
        )
    }
}

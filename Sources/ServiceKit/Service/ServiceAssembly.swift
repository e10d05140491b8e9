public import Configuration
public import Contracts
public import Hummingbird
public import Logging
public import PostgresNIO

/// The dependencies ``ServiceMain`` builds for every service, handed to its
/// ``SwarmdeckService/assemble(_:)`` step.
public struct ServiceAssembly<Settings: ServiceSettings> {
    /// The configuration, for keys the settings do not cover.
    public let reader: ConfigReader
    /// The service's own settings, already validated.
    public let settings: Settings
    /// The settings every service reads (``ServiceKitSettings``): the access-token key's
    /// issuer, audience and id among them.
    public let common: ServiceKitSettings
    /// Labelled with the service's name.
    public let logger: Logger
    /// The service's Postgres pool, with its session limits; run by the service group.
    public let postgres: PostgresClient
    /// A small pool of its own for credential checks (ingest keys), so that they never wait
    /// behind the service's other work; it opens connections only when used.
    public let credentialPostgres: PostgresClient
    /// The service's NATS connection; drained on graceful shutdown.
    public let nats: NATSConnection
    /// The subject builders for `subjects.prefix`.
    public let subjects: Subjects
    /// JetStream on ``nats``, making its streams with `nats.jetstream-replicas` replicas and its
    /// notice streams within `nats.notice-stream-max-bytes`.
    public var jetStream: JetStream {
        JetStream(
            connection: self.nats,
            streamReplicas: self.common.jetStreamReplicas,
            noticeStreamMaxBytes: Int64(self.common.noticeStreamMaxBytes)
        )
    }
    /// Verifies access tokens from `auth.jwt.*` (refusing revoked devices' tokens).
    public let verifier: AccessTokenVerifier
    /// Revoked devices, kept current by the service's ``RevocationFeed``: a service with
    /// long-lived connections closes theirs (``WebSocketHeartbeats/init(interval:revocations:)``).
    public let revocations: RevocationList
    /// The service's router: request id, metrics and error envelope middleware, and the
    /// operational routes, are already on it. Put middleware of the service's own on a group.
    public let router: Router<ServiceRequestContext>
}

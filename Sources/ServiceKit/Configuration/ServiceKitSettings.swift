public import Contracts
import Foundation
public import Hummingbird
public import Logging
public import PostgresNIO

/// The settings every service reads, beyond its own: declared as a service's own are (each key
/// once, with its default and format), and read by ``ServiceMain`` together with the
/// service's, so that every missing or malformed key of both is reported at once.
public struct ServiceKitSettings: SettingsGroup {
    /// The address the HTTP server binds.
    @Setting("http.host", "the address the HTTP server binds", default: "127.0.0.1", .text.described("a host name or address"))
    public var httpHost: String
    /// The port the HTTP server binds; the service's default port when unset.
    @Setting("http.port", "the port the HTTP server binds (each service has its own default)", .optional(.integer(in: 1...65535)))
    public var httpPort: Int?
    /// How much the service logs.
    @Setting("log.level", "how much the service logs", default: .info, .logLevel)
    public var logLevel: Logger.Level
    /// The NATS servers.
    @Setting("nats.url", "NATS server URLs, comma-separated, e.g. nats://127.0.0.1:4222 (a user's password may be in them)", secret: true, .natsURLs)
    public var natsServers: [String]
    /// The replicas of each JetStream stream a service makes.
    @Setting(
        "nats.jetstream-replicas",
        "the replicas of each JetStream stream the service makes: 1 on one server, 3 in a clustered deployment (at most the cluster's size)",
        default: 1,
        in: 1...5
    )
    public var jetStreamReplicas: Int
    /// The bytes each notice stream and the revocation stream hold.
    @Setting(
        "nats.notice-stream-max-bytes",
        "the bytes each of the gates, incidents and revocations streams holds at most (JetStream reserves them on its store)",
        default: 268_435_456,
        in: 1_048_576...68_719_476_736
    )
    public var noticeStreamMaxBytes: Int
    /// The Postgres connection, from its URL (parsed once, here).
    @Setting(
        "postgres.url",
        "the Postgres connection URL, e.g. postgres://user:password@127.0.0.1:5432/swarmdeck",
        secret: true,
        .postgresURL
    )
    public var postgres: PostgresClient.Configuration
    /// The size of the connection pool.
    @Setting("postgres.max-connections", "the size of the connection pool", default: 10, in: 1...500)
    public var postgresMaxConnections: Int
    /// Whether sessions take `search_path` and their timeouts from the role's settings.
    @Setting(
        "postgres.role-settings",
        "take search_path and the timeouts from the role's settings (ALTER ROLE … SET) instead of sending them when connecting, for a transaction pooler such as PgBouncer, which refuses them; checked at start",
        default: false
    )
    public var postgresRoleSettings: Bool
    /// The size of the pool credential checks use.
    @Setting(
        "postgres.credential-connections",
        "the size of the separate pool credential checks use (an ingest key look-up never queues behind event commits)",
        default: 2,
        in: 1...50
    )
    public var postgresCredentialConnections: Int
    /// The subject namespace.
    // The default prefix is one token of [a-z]: Subjects takes it.
    @Setting("subjects.prefix", "the first token(s) of every NATS subject", default: try! Subjects(), .subjects)
    public var subjects: Subjects
    /// The issuer access tokens must carry.
    @Setting("auth.jwt.issuer", "the issuer (iss) access tokens must carry", default: "swarmdeck")
    public var jwtIssuer: String
    /// The audience access tokens must carry.
    @Setting("auth.jwt.audience", "the audience (aud) access tokens must carry", default: "swarmdeck")
    public var jwtAudience: String
    /// The ES256 public key that verifies access tokens (the PEM file's content).
    @Setting("auth.jwt.public-key-file", "PEM file with the ES256 public key that verifies access tokens", .fileContents)
    public var jwtPublicKeyPEM: String
    /// The key id of that key.
    @Setting("auth.jwt.key-id", "the key id (kid) of that key", default: "swarmdeck-1")
    public var jwtKeyID: String

    public init() {}

    /// `nats.url` as a connection configuration named `name`.
    public func natsConfiguration(name: String, sendAsap: Bool = false) -> NATSConfiguration {
        NATSConfiguration(servers: self.natsServers, name: name, sendAsap: sendAsap, retryOnFailedConnect: true)
    }

    /// `postgres.url` and `postgres.max-connections` as a client configuration.
    public func postgresConfiguration() -> PostgresClient.Configuration {
        self.postgres(connections: self.postgresMaxConnections)
    }

    /// `postgres.url` and `postgres.credential-connections`: the pool credential checks use.
    public func credentialPostgresConfiguration() -> PostgresClient.Configuration {
        self.postgres(connections: self.postgresCredentialConnections)
    }

    private func postgres(connections: Int) -> PostgresClient.Configuration {
        var configuration = self.postgres
        configuration.options.maximumConnections = connections
        return configuration
    }

    /// `http.host` and `http.port` as the server's address; `defaultPort` when the port is unset.
    public func applicationConfiguration(serverName: String, defaultPort: Int) -> ApplicationConfiguration {
        ApplicationConfiguration(address: .hostname(self.httpHost, port: self.httpPort ?? defaultPort), serverName: serverName)
    }

    /// The access-token verifier from `auth.jwt.*`, refusing what `revocations` holds.
    public func accessTokenVerifier(revocations: RevocationList? = nil) async throws(ServiceKitError) -> AccessTokenVerifier {
        try await AccessTokenVerifier(
            publicKeys: [self.jwtKeyID: self.jwtPublicKeyPEM],
            issuer: self.jwtIssuer,
            audience: self.jwtAudience,
            revocations: revocations
        )
    }
}

extension SettingFormat where Value == Logger.Level {
    /// A log level by name.
    static var logLevel: Self {
        Self(
            expected: "one of trace, debug, info, notice, warning, error, critical",
            parse: { Logger.Level(rawValue: $0.lowercased()) },
            render: { $0.rawValue }
        )
    }
}

extension SettingFormat where Value == [String] {
    /// NATS server URLs separated by commas (`nats://` or `tls://`, each with a host).
    static var natsURLs: Self {
        Self(
            expected: "nats:// or tls:// URLs separated by commas",
            parse: { text in
                let urls = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                let valid = urls.allSatisfy { URLComponents(string: $0).map { ["nats", "tls"].contains($0.scheme) && $0.host != nil } ?? false }
                return valid && !urls.isEmpty ? urls : nil
            },
            render: { $0.joined(separator: ",") }
        )
    }
}

extension SettingFormat where Value == PostgresClient.Configuration {
    /// A Postgres URL, as ``PostgresNIO/PostgresClient/Configuration/init(url:maxConnections:)``
    /// reads it.
    static var postgresURL: Self {
        Self(
            expected: "a postgres://user:password@host:port/database URL (sslmode disable or require)",
            // What is wrong, never the URL (it holds the password).
            interpret: { text in
                Result { () throws(ServiceKitError) in try PostgresClient.Configuration(url: text) }.mapError { SettingRefusal($0.message) }
            },
            // Without its password (the key has no default to render; this is for descriptions).
            render: { "postgres://\($0.username)@\($0.host ?? $0.unixSocketPath ?? "")/\($0.database ?? "")" }
        )
    }
}

extension SettingFormat {
    /// This format with another description of what a value must be.
    func described(_ expected: String) -> Self {
        self.checked(expected) { _ in true }
    }
}

extension SettingFormat where Value == Subjects {
    /// A subject prefix: one or more subject tokens without wildcards.
    static var subjects: Self {
        Self(
            expected: "dot-separated tokens of [A-Za-z0-9_-]",
            parse: { try? Subjects(prefix: $0) },
            render: { $0.prefix }
        )
    }
}

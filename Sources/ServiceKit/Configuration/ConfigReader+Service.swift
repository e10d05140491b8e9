public import Configuration
public import Contracts
import Foundation
public import Hummingbird
public import Logging
public import PostgresNIO

extension ConfigReader {
    /// `nats.url` as a connection configuration named `name`.
    public func natsConfiguration(name: String, sendAsap: Bool = false) throws(ServiceKitError) -> NATSConfiguration {
        let servers: [String] = try self.setting(.natsURL, expected: "nats:// URLs separated by commas") { text in
            let urls = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            let valid = urls.allSatisfy { URLComponents(string: $0).map { ["nats", "tls"].contains($0.scheme) && $0.host != nil } ?? false }
            return valid && !urls.isEmpty ? urls : nil
        }
        return NATSConfiguration(servers: servers, name: name, sendAsap: sendAsap, retryOnFailedConnect: true)
    }

    /// `postgres.url` and `postgres.max-connections` as a client configuration.
    public func postgresConfiguration() throws(ServiceKitError) -> PostgresClient.Configuration {
        try self.postgresConfiguration(connections: .postgresMaxConnections, in: 1...500)
    }

    /// `postgres.url` and `postgres.credential-connections`: the pool credential checks use.
    public func credentialPostgresConfiguration() throws(ServiceKitError) -> PostgresClient.Configuration {
        try self.postgresConfiguration(connections: .postgresCredentialConnections, in: 1...50)
    }

    private func postgresConfiguration(
        connections key: SettingKey,
        in range: ClosedRange<Int>
    ) throws(ServiceKitError) -> PostgresClient.Configuration {
        let url: String = try self.setting(.postgresURL)
        return try PostgresClient.Configuration(url: url, maxConnections: try self.setting(key, in: range))
    }

    /// `http.host` and `http.port` as the server's address; `defaultPort` when unset.
    public func applicationConfiguration(serverName: String, defaultPort: Int) throws(ServiceKitError) -> ApplicationConfiguration {
        let host: String = try self.setting(.httpHost)
        let port = try self.setting(.httpPort, .optional(.integer(in: 1...65535)))
        return ApplicationConfiguration(address: .hostname(host, port: port ?? defaultPort), serverName: serverName)
    }

    /// `log.level`.
    public func logLevel() throws(ServiceKitError) -> Logger.Level {
        try self.setting(.logLevel, expected: "one of trace, debug, info, notice, warning, error, critical") {
            Logger.Level(rawValue: $0.lowercased())
        }
    }

    /// `subjects.prefix`.
    public func subjects() throws(ServiceKitError) -> Subjects {
        let prefix: String = try self.setting(.subjectsPrefix)
        do {
            return try Subjects(prefix: prefix)
        } catch {
            throw ServiceKitError(.configuration, "malformed configuration key \(SettingKey.subjectsPrefix): \(error.message)")
        }
    }

    /// The access-token verifier from `auth.jwt.*`, refusing what `revocations` holds.
    public func accessTokenVerifier(revocations: RevocationList? = nil) async throws(ServiceKitError) -> AccessTokenVerifier {
        let path: String = try self.setting(.jwtPublicKeyFile)
        let pem: String
        do {
            pem = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ServiceKitError(
                .configuration,
                "cannot read configuration key \(SettingKey.jwtPublicKeyFile): \(path): \(error.localizedDescription)"
            )
        }
        return try await AccessTokenVerifier(
            publicKeys: [try self.setting(.jwtKeyID): pem],
            issuer: try self.setting(.jwtIssuer),
            audience: try self.setting(.jwtAudience),
            revocations: revocations
        )
    }
}

import Foundation
public import PostgresNIO

extension PostgresClient.Configuration {
    /// A configuration from `postgres://user:password@host:port/database[?sslmode=disable|require]`.
    /// - Throws: ``ServiceKitError/Code/configuration`` saying what is wrong, never echoing the password.
    public init(url text: String, maxConnections: Int = 10) throws(ServiceKitError) {
        guard let components = URLComponents(string: text),
            components.scheme == "postgres" || components.scheme == "postgresql",
            let host = components.host, !host.isEmpty
        else {
            throw ServiceKitError(
                .configuration,
                "malformed Postgres URL: expected postgres://user:password@host:port/database"
            )
        }
        let database = String(components.path.drop { $0 == "/" })
        guard let user = components.user, !user.isEmpty, !database.isEmpty else {
            throw ServiceKitError(.configuration, "malformed Postgres URL: user and database are required")
        }
        let sslMode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        let tls: PostgresClient.Configuration.TLS
        switch sslMode {
        case "disable": tls = .disable
        case "require": tls = .require(.clientDefault)
        default:
            throw ServiceKitError(.configuration, "malformed Postgres URL: sslmode must be disable or require")
        }
        self.init(
            host: host,
            port: components.port ?? 5432,
            username: user.removingPercentEncoding ?? user,
            password: components.password?.removingPercentEncoding,
            database: database,
            tls: tls
        )
        self.options.maximumConnections = maxConnections
        self.options.minimumConnections = 0
    }
}

import Foundation
public import Logging
public import PostgresNIO

/// The server-side limits of a service's Postgres sessions.
///
/// postgres-nio does not cancel a statement that is already running, so a lock wait or a
/// stuck statement must end on the server's side: every service's sessions carry a statement
/// timeout, and those that write carry a lock timeout and an idle-in-transaction timeout too.
public struct PostgresSession: Sendable, Equatable {
    /// The schema unqualified table names resolve to; `nil` leaves the server's default.
    public var searchPath: String?
    public var statementTimeout: Duration
    public var lockTimeout: Duration?
    public var idleInTransactionTimeout: Duration?
    /// How long opening a connection may take: short, so clients get 503 while Postgres is down
    /// instead of a long wait.
    public var connectTimeout: Duration
    /// The sessions' `application_name` in `pg_stat_activity` and the server's logs
    /// (``ServiceMain`` sets `<service>/<schema>`); Postgres keeps its first 63 bytes.
    public var applicationName: String?

    public init(
        searchPath: String?,
        statementTimeout: Duration,
        lockTimeout: Duration? = nil,
        idleInTransactionTimeout: Duration? = nil,
        connectTimeout: Duration = .seconds(2)
    ) {
        self.searchPath = searchPath
        self.statementTimeout = statementTimeout
        self.lockTimeout = lockTimeout
        self.idleInTransactionTimeout = idleInTransactionTimeout
        self.connectTimeout = connectTimeout
    }

    /// The default of a service that writes its own schema: names resolve there, statements and
    /// lock waits end after 5 s, a transaction left idle after 10 s.
    public static func owning(_ schema: String) -> PostgresSession {
        PostgresSession(searchPath: schema, statementTimeout: .seconds(5), lockTimeout: .seconds(5), idleInTransactionTimeout: .seconds(10))
    }

    /// The startup parameters that set these limits on every connection of the pool.
    public var startupParameters: [(String, String)] {
        var parameters: [(String, String)] = []
        if let searchPath = self.searchPath { parameters.append(("search_path", searchPath)) }
        parameters.append(("statement_timeout", Self.milliseconds(self.statementTimeout)))
        if let lockTimeout = self.lockTimeout { parameters.append(("lock_timeout", Self.milliseconds(lockTimeout))) }
        if let idle = self.idleInTransactionTimeout { parameters.append(("idle_in_transaction_session_timeout", Self.milliseconds(idle))) }
        if let name = self.applicationName { parameters.append(("application_name", name)) }
        return parameters
    }

    /// Applies the limits to a client configuration; with `roleSettings`, only the application
    /// name is sent (a transaction pooler refuses the rest: the role's settings give them,
    /// ``roleSettingsProblem(_:role:)`` checks).
    public func apply(to configuration: inout PostgresClient.Configuration, roleSettings: Bool = false) {
        configuration.options.additionalStartupParameters =
            roleSettings ? self.startupParameters.filter { $0.0 == "application_name" } : self.startupParameters
        configuration.options.connectTimeout = self.connectTimeout
    }

    /// The settings a role must carry for sessions that send none (`postgres.role-settings`).
    public var roleSettings: [(name: String, value: String)] {
        self.startupParameters.filter { $0.0 != "application_name" }.map { (name: $0.0, value: $0.1) }
    }

    /// The statements that give `role` these settings (the search path as a list of quoted
    /// identifiers: a quoted string would be one schema named after the whole list).
    public func roleSQL(role: String) -> String {
        self.roleSettings.map { setting in
            let value =
                setting.name == "search_path"
                ? Self.searchPath(setting.value).map(Self.identifier).joined(separator: ", ")
                : "'" + setting.value.replacingOccurrences(of: "'", with: "''") + "'"
            return "ALTER ROLE \(Self.identifier(role)) SET \(setting.name) = \(value);"
        }
        .joined(separator: "\n")
    }

    private static func identifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The schemas of a search path, as written in `search_path` (quotes taken off).
    static func searchPath(_ value: String) -> [String] {
        value.split(separator: ",").map {
            var name = $0.trimmingCharacters(in: .whitespaces)
            if name.count >= 2, name.hasPrefix("\""), name.hasSuffix("\"") {
                name = String(name.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"")
            }
            return name
        }
    }

    /// What differs between these settings and those a session of `client` has (the role's,
    /// when nothing is sent at connection): nil when nothing does, else a sentence naming the
    /// differences and the statements that set them.
    public func roleSettingsProblem(_ client: PostgresClient, logger: Logger) async throws -> String? {
        let names = self.roleSettings.map(\.name)
        let rows = try await client.query(
            "SELECT current_user::text, name, setting FROM pg_settings WHERE name = ANY(\(names))",
            logger: logger
        )
        var role = ""
        var actual: [String: String] = [:]
        for try await (user, name, setting) in rows.decode((String, String, String).self) {
            role = user
            actual[name] = setting
        }
        let differing = self.roleSettings.filter { expected in
            // pg_settings gives times in milliseconds, as they are sent; the search path as a
            // list, compared schema by schema.
            guard let value = actual[expected.name] else { return true }
            return expected.name == "search_path" ? Self.searchPath(value) != Self.searchPath(expected.value) : value != expected.value
        }
        guard !differing.isEmpty else { return nil }
        return "postgres.role-settings is on, but role \(role)'s sessions have "
            + differing.map { "\($0.name) = \(actual[$0.name] ?? "none") (not \($0.value))" }.joined(separator: ", ")
            + "; as a superuser, run: " + self.roleSQL(role: role).replacingOccurrences(of: "\n", with: " ")
    }

    private static func milliseconds(_ duration: Duration) -> String {
        String(Int64(duration.millisecondsDouble.rounded()))
    }
}

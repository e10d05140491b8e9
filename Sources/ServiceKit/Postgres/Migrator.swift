public import Logging
public import PostgresNIO

/// Applies a service's migrations to its own schema.
///
/// Safe when several replicas start at once: everything happens in one transaction holding a
/// transaction-scoped advisory lock per schema, so one migrator applies and the others then
/// find nothing to do. Applying twice is a no-op. An applied migration whose SQL changed is
/// an error, not silently skipped.
public struct Migrator: Sendable {
    /// The schema the service owns, e.g. `ingest`.
    public let schema: String
    public let migrations: [Migration]

    public init(schema: String, migrations: [Migration]) throws(ServiceKitError) {
        guard Self.isIdentifier(schema) else {
            throw ServiceKitError(.migration, "schema name '\(schema)' must match [a-z_][a-z0-9_]{0,62}")
        }
        let versions = migrations.map(\.version)
        guard versions.enumerated().allSatisfy({ $0.offset + 1 == $0.element }) else {
            throw ServiceKitError(.migration, "migrations of \(schema) must be numbered 1, 2, 3… in order; got \(versions)")
        }
        self.schema = schema
        self.migrations = migrations
    }

    /// Applies what is missing; returns the versions applied by this call.
    @discardableResult
    public func migrate(_ client: PostgresClient, logger: Logger) async throws -> [Int] {
        try await client.withConnection { connection in
            try await self.migrate(connection, logger: logger)
        }
    }

    /// Applies what is missing on one connection.
    @discardableResult
    public func migrate(_ connection: PostgresConnection, logger: Logger) async throws -> [Int] {
        let schema = self.schema
        let lockKey = "swarmdeck.migrate.\(schema)"
        try await connection.query("BEGIN", logger: logger)
        do {
            // A service's sessions may carry short statement and lock timeouts for its
            // requests; a migration (copying a large table, waiting for another replica's
            // migration) must not inherit them.
            try await connection.query("SET LOCAL statement_timeout = 0", logger: logger)
            try await connection.query("SET LOCAL lock_timeout = 0", logger: logger)
            try await connection.perform("SELECT pg_advisory_xact_lock(hashtext(\(lockKey)))", logger: logger)
            // A schema made beforehand for a role that owns it but may not create schemas (the
            // staging stack's least-privilege roles) is used as it is: CREATE SCHEMA IF NOT EXISTS
            // would still need the database's CREATE privilege.
            let existing = try await connection.query("SELECT 1 FROM pg_namespace WHERE nspname = \(schema)", logger: logger)
            if try await existing.collect().isEmpty {
                try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"), logger: logger)
            }
            try await self.run(
                """
                CREATE TABLE IF NOT EXISTS \(schema).schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    checksum bigint NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                );
                SET LOCAL search_path TO \(schema), public;
                """,
                on: connection,
                logger: logger
            )
            var applied: [Int: Int64] = [:]
            let rows = try await connection.query("SELECT version, checksum FROM schema_migrations", logger: logger)
            for try await (version, checksum) in rows.decode((Int, Int64).self) {
                applied[version] = checksum
            }
            var appliedNow: [Int] = []
            for migration in self.migrations {
                if let checksum = applied[migration.version] {
                    guard checksum == migration.checksum else {
                        throw ServiceKitError(
                            .migration,
                            "migration \(schema) \(migration.version) (\(migration.name)) was changed after it was applied"
                        )
                    }
                    continue
                }
                logger.info("applying migration", metadata: ["schema": "\(schema)", "version": "\(migration.version)", "name": "\(migration.name)"])
                try await self.run(migration.sql, on: connection, logger: logger)
                try await connection.query(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES (\(migration.version), \(migration.name), \(migration.checksum))",
                    logger: logger
                )
                appliedNow.append(migration.version)
            }
            if let unknown = applied.keys.filter({ $0 > self.migrations.count }).min() {
                throw ServiceKitError(
                    .migration,
                    "\(schema) has migration \(unknown) applied, which this build does not know: an older build against a newer schema"
                )
            }
            try await connection.query("COMMIT", logger: logger)
            return appliedNow
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }

    /// Runs a script statement by statement (the extended protocol takes one at a time), each read
    /// to its end, so a statement that fails in its execution fails the migration as itself.
    private func run(_ script: String, on connection: PostgresConnection, logger: Logger) async throws {
        for statement in SQLStatementSplitter.split(script) {
            try await connection.perform(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 63 else { return false }
        let isStart = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) || first == UInt8(ascii: "_")
        return isStart
            && name.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: "_")
            }
    }
}

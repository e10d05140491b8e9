import Crypto
public import Foundation
public import Logging
public import PostgresNIO
public import ServiceKit

/// Per-tenant ingest keys: `sdi_<key id>_<secret>`, stored as the SHA-256 of the secret, shown
/// once at creation, revocable. The tenant of everything sent with a key comes from the key.
public final class IngestKeyStore: AgentKeyAuthenticator {
    public struct KeyInfo: Codable, Sendable {
        public var keyId: String
        public var name: String
        public var createdAt: Date
        public var revokedAt: Date?
    }

    let client: PostgresClient
    let logger: Logger
    /// Checks keys (shared with control-api, which authenticates agents with them).
    public let verifier: IngestKeyVerifier

    /// - Parameter client: sessions with ingest's schema first on the `search_path`.
    public init(client: PostgresClient, schema: String, logger: Logger, cacheLifetime: Duration, lookupTimeout: Duration) {
        self.client = client
        self.logger = logger
        self.verifier = IngestKeyVerifier(client: client, schema: schema, logger: logger, cacheLifetime: cacheLifetime, lookupTimeout: lookupTimeout)
    }

    /// Creates a key for `tenant` (creating the tenant if new); returns its id and the full key.
    public func create(tenant: String, name: String) async throws -> (keyID: String, key: String) {
        let keyID = randomHex(bytes: 8)
        let secret = randomHex(bytes: 32)
        let digest = ByteBuffer(bytes: Array(SHA256.hash(data: Array(secret.utf8))))
        try await self.client.withTransaction(logger: self.logger) { connection in
            try await connection.query("INSERT INTO tenants (tenant_id) VALUES (\(tenant)) ON CONFLICT DO NOTHING", logger: self.logger)
            try await connection.query(
                "INSERT INTO ingest_keys (key_id, tenant_id, name, secret_sha256) VALUES (\(keyID), \(tenant), \(name), \(digest))",
                logger: self.logger
            )
        }
        self.verifier.remember(keyID: keyID)
        return (keyID, "sdi_\(keyID)_\(secret)")
    }

    /// The keys of `tenant`, newest first.
    public func list(tenant: String) async throws -> [KeyInfo] {
        let rows = try await self.client.query(
            "SELECT key_id, name, created_at, revoked_at FROM ingest_keys WHERE tenant_id = \(tenant) ORDER BY created_at DESC",
            logger: self.logger
        )
        var keys: [KeyInfo] = []
        for try await (keyID, name, created, revoked) in rows.decode((String, String, Date, Date?).self) {
            keys.append(KeyInfo(keyId: keyID, name: name, createdAt: created, revokedAt: revoked))
        }
        return keys
    }

    /// Revokes a key of `tenant`; false if it has no such key. Returns once the revocation is
    /// committed (in an explicit transaction: see ``EventLogAppender``'s append for why).
    public func revoke(keyID: String, tenant: String) async throws -> Bool {
        let found = try await self.client.transaction(logger: self.logger) { connection in
            let rows = try await connection.query(
                "UPDATE ingest_keys SET revoked_at = coalesce(revoked_at, now()) WHERE key_id = \(keyID) AND tenant_id = \(tenant) RETURNING key_id",
                logger: self.logger
            )
            var found = false
            for try await _ in rows.decode(String.self) { found = true }
            return found
        }
        self.verifier.forget(keyID: keyID)
        return found
    }

    /// The tenant a key belongs to (see ``IngestKeyVerifier/authenticate(_:)``).
    public func authenticate(_ key: String) async throws(APIError) -> String {
        try await self.verifier.authenticate(key)
    }

    /// The id of a key (see ``IngestKeyVerifier/keyID(of:)``).
    public func keyID(of key: String) -> String? {
        self.verifier.keyID(of: key)
    }
}

import Crypto
import Foundation
import Logging
import PostgresNIO
import ServiceKit
import Synchronization

/// Per-tenant ingest keys: `sdi_<key id>_<secret>`, stored as the SHA-256 of the secret, shown
/// once at creation, revocable. The tenant of everything sent with a key comes from the key.
final class IngestKeyStore: Sendable {
    struct KeyInfo: Codable, Sendable {
        var keyId: String
        var name: String
        var createdAt: Date
        var revokedAt: Date?
    }

    private struct CachedKey {
        var tenant: String
        var digest: [UInt8]
        var expires: ContinuousClock.Instant
    }

    let client: PostgresClient
    let logger: Logger
    let cacheLifetime: Duration
    let lookupTimeout: Duration
    private let cache = Mutex<[String: CachedKey]>([:])

    init(client: PostgresClient, logger: Logger, cacheLifetime: Duration, lookupTimeout: Duration) {
        self.client = client
        self.logger = logger
        self.cacheLifetime = cacheLifetime
        self.lookupTimeout = lookupTimeout
    }

    /// Creates a key for `tenant` (creating the tenant if new); returns its id and the full key.
    func create(tenant: String, name: String) async throws -> (keyID: String, key: String) {
        let keyID = Self.randomHex(bytes: 8)
        let secret = Self.randomHex(bytes: 32)
        let digest = ByteBuffer(bytes: Array(SHA256.hash(data: Array(secret.utf8))))
        try await self.client.withTransaction(logger: self.logger) { connection in
            try await connection.query("INSERT INTO tenants (tenant_id) VALUES (\(tenant)) ON CONFLICT DO NOTHING", logger: self.logger)
            try await connection.query(
                "INSERT INTO ingest_keys (key_id, tenant_id, name, secret_sha256) VALUES (\(keyID), \(tenant), \(name), \(digest))",
                logger: self.logger
            )
        }
        return (keyID, "sdi_\(keyID)_\(secret)")
    }

    /// The keys of `tenant`, newest first.
    func list(tenant: String) async throws -> [KeyInfo] {
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

    /// Revokes a key of `tenant`; false if it has no such key.
    func revoke(keyID: String, tenant: String) async throws -> Bool {
        let rows = try await self.client.query(
            "UPDATE ingest_keys SET revoked_at = coalesce(revoked_at, now()) WHERE key_id = \(keyID) AND tenant_id = \(tenant) RETURNING key_id",
            logger: self.logger
        )
        var found = false
        for try await _ in rows.decode(String.self) { found = true }
        self.cache.withLock { _ = $0.removeValue(forKey: keyID) }
        return found
    }

    /// The tenant a key belongs to.
    /// - Throws: `AuthInvalid` for a malformed, unknown or revoked key; `ServiceUnavailable`
    ///   when the key cannot be looked up.
    func authenticate(_ key: String) async throws(ServiceKitError) -> String {
        let parts = key.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "sdi", parts[1].utf8.count == 16, parts[2].utf8.count == 64 else {
            throw ServiceKitError(.api(.authInvalid), "not a Swarmdeck ingest key (sdi_…)")
        }
        let keyID = String(parts[1])
        let digest = Array(SHA256.hash(data: Array(parts[2].utf8)))
        let now = ContinuousClock.now
        if let cached = self.cache.withLock({ $0[keyID] }), cached.expires > now {
            guard Self.constantTimeEqual(cached.digest, digest) else { throw ServiceKitError(.api(.authInvalid), "unknown or revoked ingest key") }
            return cached.tenant
        }
        let found: (String, [UInt8])?
        do {
            found = try await self.lookup(keyID: keyID)
        } catch {
            throw ServiceKitError(.api(.serviceUnavailable), "ingest keys cannot be checked right now", retryAfterSeconds: 1)
        }
        guard let (tenant, stored) = found, Self.constantTimeEqual(stored, digest) else {
            throw ServiceKitError(.api(.authInvalid), "unknown or revoked ingest key")
        }
        self.cache.withLock { $0[keyID] = CachedKey(tenant: tenant, digest: stored, expires: now + self.cacheLifetime) }
        return tenant
    }

    /// The key's tenant and digest, or nil; gives up after the lookup timeout (the pool would
    /// otherwise hold the request while Postgres is unreachable).
    private func lookup(keyID: String) async throws -> (String, [UInt8])? {
        try await withDeadline(
            self.lookupTimeout,
            orThrow: ServiceKitError(.api(.serviceUnavailable), "ingest keys cannot be checked right now", retryAfterSeconds: 1)
        ) {
            var found: (String, [UInt8])?
            let rows = try await self.client.query(
                "SELECT tenant_id, secret_sha256 FROM ingest_keys WHERE key_id = \(keyID) AND revoked_at IS NULL",
                logger: self.logger
            )
            for try await (tenant, stored) in rows.decode((String, ByteBuffer).self) {
                found = (tenant, Array(buffer: stored))
            }
            return found
        }
    }

    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max, using: &generator)) }.joined()
    }
}

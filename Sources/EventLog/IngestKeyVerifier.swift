import Crypto
public import Logging
public import PostgresNIO
public import ServiceKit
import Synchronization

/// Checks ingest keys (`sdi_<key id>_<secret>`) against ingest's `ingest_keys` table, with a
/// short cache: ingest authenticates every batch with it, control-api the agents' command
/// channel. Only ingest writes the table.
public final class IngestKeyVerifier: AgentKeyAuthenticator {
    private struct CachedKey {
        var tenant: String
        var digest: [UInt8]
        var expires: ContinuousClock.Instant
    }

    private let client: PostgresClient
    private let logger: Logger
    private let table: String
    private let cacheLifetime: Duration
    private let lookupTimeout: Duration
    private let cache = Mutex<[String: CachedKey]>([:])

    /// - Parameters:
    ///   - schema: the schema of the `ingest_keys` table (ingest's, `ingest` by default); a
    ///     plain identifier, checked by the caller's configuration.
    ///   - cacheLifetime: how long a checked key is trusted without asking Postgres; a revoked
    ///     key works for at most this long on other replicas.
    ///   - lookupTimeout: a lookup that takes longer answers `ServiceUnavailable`.
    public init(client: PostgresClient, schema: String, logger: Logger, cacheLifetime: Duration, lookupTimeout: Duration) {
        self.client = client
        self.table = "\"\(schema)\".ingest_keys"
        self.logger = logger
        self.cacheLifetime = cacheLifetime
        self.lookupTimeout = lookupTimeout
    }

    /// The tenant a key belongs to.
    /// - Throws: `AuthInvalid` for a malformed, unknown or revoked key; `ServiceUnavailable`
    ///   when the key cannot be looked up.
    public func authenticate(_ key: String) async throws(APIError) -> String {
        let parts = key.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "sdi", parts[1].utf8.count == 16, parts[2].utf8.count == 64 else {
            throw APIError(.authInvalid, "not a Swarmdeck ingest key (sdi_…)")
        }
        let keyID = String(parts[1])
        let digest = Array(SHA256.hash(data: Array(parts[2].utf8)))
        let now = ContinuousClock.now
        if let cached = self.cache.withLock({ $0[keyID] }), cached.expires > now {
            guard Self.constantTimeEqual(cached.digest, digest) else { throw APIError(.authInvalid, "unknown or revoked ingest key") }
            return cached.tenant
        }
        let found: (String, [UInt8])?
        do {
            found = try await self.lookup(keyID: keyID)
        } catch {
            throw APIError(.serviceUnavailable, "ingest keys cannot be checked right now", retryAfterSeconds: 1)
        }
        guard let (tenant, stored) = found, Self.constantTimeEqual(stored, digest) else {
            throw APIError(.authInvalid, "unknown or revoked ingest key")
        }
        self.cache.withLock { $0[keyID] = CachedKey(tenant: tenant, digest: stored, expires: now + self.cacheLifetime) }
        return tenant
    }

    /// Forgets a cached key (after revoking it).
    public func forget(keyID: String) {
        self.cache.withLock { _ = $0.removeValue(forKey: keyID) }
    }

    /// The key's tenant and digest, or nil; gives up after the lookup timeout (the pool would
    /// otherwise hold the request while Postgres is unreachable).
    private func lookup(keyID: String) async throws -> (String, [UInt8])? {
        try await withDeadline(
            self.lookupTimeout,
            orThrow: APIError(.serviceUnavailable, "ingest keys cannot be checked right now", retryAfterSeconds: 1)
        ) {
            var found: (String, [UInt8])?
            let rows = try await self.client.query(
                "SELECT tenant_id, secret_sha256 FROM \(unescaped: self.table) WHERE key_id = \(keyID) AND revoked_at IS NULL",
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
}

import Crypto
public import Logging
public import PostgresNIO
public import ServiceKit
import Synchronization

/// Checks ingest keys (`sdi_<key id>_<secret>`) against ingest's `ingest_keys` table, with a
/// short cache: ingest authenticates every batch with it, control-api the agents' command
/// channel. Only ingest writes the table.
///
/// Unknown keys are cheap: the verifier keeps the ids of the keys that exist, and a key whose
/// id it does not know costs no query of its own. It waits for the next reload of the ids
/// (one query for all such keys, at most one per `reloadInterval`; a second one if the first
/// began before it arrived) and is refused if its id is still unknown. A key created on another replica is therefore accepted within
/// `reloadInterval` of its first use. A known id is looked up about once per `cacheLifetime`
/// (requests arriving together when its entry has expired may each look it up), and the
/// secret is compared in memory, so wrong secrets for a real id cost no look-up either.
public final class IngestKeyVerifier: AgentKeyAuthenticator {
    private struct CachedKey {
        var tenant: String
        var digest: [UInt8]
        var expires: ContinuousClock.Instant
    }

    /// The ids of the keys that exist, as of the last reload.
    private struct KnownIDs {
        var ids: Set<String> = []
        var loadedAt: ContinuousClock.Instant?
        /// When the last reload's query began: a key created before it is in the ids.
        var queryStartedAt: ContinuousClock.Instant?
        /// The reload under way (or scheduled), which callers with an unknown id await.
        var reload: Task<Bool, Never>?
    }

    /// What the verifier asked Postgres, for tests and metrics.
    public struct Statistics: Sendable, Equatable {
        /// Look-ups of one key id.
        public var keyLookups: Int
        /// Reloads of the known ids.
        public var reloads: Int
    }

    private let client: PostgresClient
    private let logger: Logger
    private let table: String
    private let cacheLifetime: Duration
    private let lookupTimeout: Duration
    private let reloadInterval: Duration
    private let cache = Mutex<[String: CachedKey]>([:])
    private let known = Mutex(KnownIDs())
    private let keyLookups = Atomic<Int>(0)
    private let reloads = Atomic<Int>(0)

    /// - Parameters:
    ///   - schema: the schema of the `ingest_keys` table (ingest's, `ingest` by default); a
    ///     plain identifier, checked by the caller's configuration.
    ///   - cacheLifetime: how long a checked key is trusted without asking Postgres; a revoked
    ///     key works for at most this long on other replicas.
    ///   - lookupTimeout: a lookup that takes longer answers `ServiceUnavailable`.
    ///   - reloadInterval: the least time between two reloads of the known key ids.
    public init(
        client: PostgresClient,
        schema: String,
        logger: Logger,
        cacheLifetime: Duration,
        lookupTimeout: Duration,
        reloadInterval: Duration = .seconds(1)
    ) {
        self.client = client
        self.table = "\"\(schema)\".ingest_keys"
        self.logger = logger
        self.cacheLifetime = cacheLifetime
        self.lookupTimeout = lookupTimeout
        self.reloadInterval = reloadInterval
    }

    /// What the verifier has asked Postgres so far.
    public var statistics: Statistics {
        Statistics(keyLookups: self.keyLookups.load(ordering: .relaxed), reloads: self.reloads.load(ordering: .relaxed))
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
            guard constantTimeEqual(cached.digest, digest) else { throw APIError(.authInvalid, "unknown or revoked ingest key") }
            return cached.tenant
        }
        guard try await self.isKnown(keyID) else { throw APIError(.authInvalid, "unknown or revoked ingest key") }
        let found: (String, [UInt8])?
        do {
            found = try await self.lookup(keyID: keyID)
        } catch {
            throw APIError(.serviceUnavailable, "ingest keys cannot be checked right now", retryAfterSeconds: 1)
        }
        guard let (tenant, stored) = found else {
            // Revoked (or gone) since the ids were read: later tries wait for a reload.
            self.known.withLock { _ = $0.ids.remove(keyID) }
            throw APIError(.authInvalid, "unknown or revoked ingest key")
        }
        self.cache.withLock { $0[keyID] = CachedKey(tenant: tenant, digest: stored, expires: now + self.cacheLifetime) }
        guard constantTimeEqual(stored, digest) else { throw APIError(.authInvalid, "unknown or revoked ingest key") }
        return tenant
    }

    /// The id of a key in the ingest key format (`sdi_<id>_<secret>`), or nil.
    public func keyID(of key: String) -> String? {
        let parts = key.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "sdi", parts[1].utf8.count == 16, parts[2].utf8.count == 64 else { return nil }
        return String(parts[1])
    }

    /// Whether the key `keyID` still exists unrevoked (from the cache while it is fresh, else
    /// one look-up): what keeps a credential derived from a key (an agent session) no longer
    /// alive than the key.
    public func isActive(keyID: String) async throws(APIError) -> Bool {
        if let cached = self.cache.withLock({ $0[keyID] }), cached.expires > ContinuousClock.now { return true }
        let found: (String, [UInt8])?
        do {
            found = try await self.lookup(keyID: keyID)
        } catch {
            throw APIError(.serviceUnavailable, "ingest keys cannot be checked right now", retryAfterSeconds: 1)
        }
        guard let (tenant, stored) = found else { return false }
        self.cache.withLock { $0[keyID] = CachedKey(tenant: tenant, digest: stored, expires: ContinuousClock.now + self.cacheLifetime) }
        return true
    }

    /// Forgets a cached key (after revoking it).
    public func forget(keyID: String) {
        self.cache.withLock { _ = $0.removeValue(forKey: keyID) }
    }

    /// Knows a key id at once (after creating it on this replica).
    public func remember(keyID: String) {
        self.known.withLock { _ = $0.ids.insert(keyID) }
    }

    /// Whether `keyID` exists: from the known ids, else after the next reload (started now, or
    /// when `reloadInterval` has passed since the last, and shared by every caller waiting).
    private func isKnown(_ keyID: String) async throws(APIError) -> Bool {
        let arrival = ContinuousClock.now
        // At most two reloads: the one under way may have read the ids before this key existed.
        for _ in 0..<2 {
            let (isKnown, reload): (Bool, Task<Bool, Never>?) = self.known.withLock { state in
                if state.ids.contains(keyID) { return (true, nil) }
                if let reload = state.reload { return (false, reload) }
                let wait = state.loadedAt.map { max(.zero, $0 + self.reloadInterval - .now) } ?? .zero
                let reload = Task { await self.reloadIDs(after: wait) }
                state.reload = reload
                return (false, reload)
            }
            if isKnown { return true }
            guard let reload, await reload.value else {
                throw APIError(.serviceUnavailable, "ingest keys cannot be checked right now", retryAfterSeconds: 1)
            }
            let (found, readBeforeArrival) = self.known.withLock { state in
                (state.ids.contains(keyID), state.queryStartedAt.map { $0 < arrival } ?? true)
            }
            if found || !readBeforeArrival { return found }
        }
        return false
    }

    /// Reads the ids of the keys that are not revoked, after `wait`; false if that failed.
    private func reloadIDs(after wait: Duration) async -> Bool {
        if wait > .zero { try? await Task.sleep(for: wait) }
        self.reloads.add(1, ordering: .relaxed)
        let started = ContinuousClock.now
        do {
            let ids = try await withDeadline(self.lookupTimeout, orThrow: CancellationError()) {
                var ids = Set<String>()
                let rows = try await self.client.query("SELECT key_id FROM \(unescaped: self.table) WHERE revoked_at IS NULL", logger: self.logger)
                for try await id in rows.decode(String.self) { ids.insert(id) }
                return ids
            }
            self.known.withLock { state in
                // A union: an id `remember` added while the query ran stays; a revoked one is
                // dropped by its failed look-up.
                state.ids.formUnion(ids)
                state.queryStartedAt = started
                state.loadedAt = .now
                state.reload = nil
            }
            return true
        } catch {
            self.logger.warning("ingest key ids cannot be read", metadata: ["error": "\(String(reflecting: error))"])
            self.known.withLock { state in
                state.loadedAt = .now
                state.reload = nil
            }
            return false
        }
    }

    /// The key's tenant and digest, or nil; gives up after the lookup timeout (the pool would
    /// otherwise hold the request while Postgres is unreachable).
    private func lookup(keyID: String) async throws -> (String, [UInt8])? {
        self.keyLookups.add(1, ordering: .relaxed)
        return try await withDeadline(
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
}

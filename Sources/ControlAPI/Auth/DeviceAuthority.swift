import Contracts
import Crypto
import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// People and devices: one-time enrolment codes, devices, access tokens and rotating refresh
/// tokens grouped in families (one per registration). Reusing a rotated refresh token revokes
/// its family: whoever holds the newer one must enrol again.
struct DeviceAuthority: Sendable {
    let client: PostgresClient
    let signer: AccessTokenSigner
    let accessLifetime: Duration
    let refreshLifetime: Duration
    /// The longest a sign-in (a refresh family) lasts, however often it rotates.
    let familyLifetime: Duration
    let logger: Logger

    /// The scopes a code grants when the admin names none: everything but administration.
    static let defaultScopes: Set<Scope> = Set(Scope.allCases).subtracting([.admin])

    /// `count` codes for `tenant` (created on first use), valid for `lifetime`.
    func createCodes(
        tenant: String,
        createdBy: String,
        count: Int,
        scopes: Set<Scope>,
        lifetime: Duration
    ) async throws -> (codes: [String], expiresAt: Date) {
        let expiresAt = Date().addingTimeInterval(TimeInterval(lifetime.components.seconds))
        let codes = (0..<count).map { _ in "sde_" + randomHex(bytes: 16) }
        let scopeNames = scopes.map(\.rawValue).sorted()
        try await self.client.withTransaction(logger: self.logger) { connection in
            try await connection.query("INSERT INTO tenants (tenant_id) VALUES (\(tenant)) ON CONFLICT DO NOTHING", logger: self.logger)
            for code in codes {
                try await connection.query(
                    """
                    INSERT INTO enrolment_codes (code_sha256, tenant_id, scopes, created_by, expires_at)
                    VALUES (\(Self.digest(code)), \(tenant), \(scopeNames), \(createdBy), \(expiresAt))
                    """,
                    logger: self.logger
                )
            }
        }
        return (codes, expiresAt)
    }

    /// A sign-in about to be made: a new device's id, its refresh family and first refresh token.
    struct NewSignIn: Sendable {
        var deviceID: String
        var familyID: String
        var refresh: String
        var familyExpires: Date
        var refreshExpires: Date
    }

    func newSignIn() -> NewSignIn {
        let familyID = randomHex(bytes: 8)
        let familyExpires = Date().addingTimeInterval(TimeInterval(self.familyLifetime.components.seconds))
        return NewSignIn(
            deviceID: "dev_" + randomHex(bytes: 12),
            familyID: familyID,
            refresh: Self.refreshToken(family: familyID),
            familyExpires: familyExpires,
            refreshExpires: min(familyExpires, Date().addingTimeInterval(TimeInterval(self.refreshLifetime.components.seconds)))
        )
    }

    /// Stores `signIn`'s device (signed in as `person`, for a provider's sign-in), its family
    /// and its first refresh token, in the caller's transaction.
    func store(
        _ signIn: NewSignIn,
        tenant: String,
        deviceName: String,
        platform: String?,
        scopes: [String],
        person: String?,
        on connection: PostgresConnection
    ) async throws {
        try await connection.query(
            """
            INSERT INTO devices (device_id, tenant_id, name, platform, scopes, person)
            VALUES (\(signIn.deviceID), \(tenant), \(deviceName), \(platform), \(scopes), \(person))
            """,
            logger: self.logger
        )
        try await connection.query(
            """
            INSERT INTO refresh_families (family_id, device_id, tenant_id, expires_at)
            VALUES (\(signIn.familyID), \(signIn.deviceID), \(tenant), \(signIn.familyExpires))
            """,
            logger: self.logger
        )
        try await connection.query(
            """
            INSERT INTO refresh_tokens (token_sha256, family_id, expires_at)
            VALUES (\(Self.digest(signIn.refresh)), \(signIn.familyID), \(signIn.refreshExpires))
            """,
            logger: self.logger
        )
    }

    /// Trades an unused, unexpired code for a new device and its first tokens.
    func register(code: String, deviceName: String, platform: String?) async throws -> TokenPair {
        let signIn = self.newSignIn()
        let granted: (tenant: String, scopes: [String])? = try await self.client.withTransaction(logger: self.logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE enrolment_codes SET used_at = now(), device_id = \(signIn.deviceID)
                WHERE code_sha256 = \(Self.digest(code)) AND used_at IS NULL AND revoked_at IS NULL AND expires_at > now()
                RETURNING tenant_id, scopes
                """,
                logger: self.logger
            )
            var granted: (String, [String])?
            for try await row in rows.decode((String, [String]).self) { granted = row }
            guard let (tenant, scopes) = granted else { return nil }
            try await self.store(signIn, tenant: tenant, deviceName: deviceName, platform: platform, scopes: scopes, person: nil, on: connection)
            return (tenant, scopes)
        }
        guard let granted else {
            throw APIError(.authInvalid, "the enrolment code is unknown, used, revoked or expired")
        }
        return try await self.pair(tenant: granted.tenant, signIn: signIn, scopes: granted.scopes)
    }

    private enum Rotation {
        case unknown
        case revoked
        case expired
        case reused
        case rotated(tenant: String, device: String, scopes: [String])
    }

    /// Rotates a refresh token: the old one stops working, a new one of the same family is
    /// returned with a new access token.
    func refresh(_ token: String) async throws -> TokenPair {
        let parts = token.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "sdr", parts[1].utf8.count == 16, parts[2].utf8.count == 64 else {
            throw APIError(.authInvalid, "not a Swarmdeck refresh token (sdr_…)")
        }
        let familyID = String(parts[1])
        let next = Self.refreshToken(family: familyID)
        var nextExpires = Date().addingTimeInterval(TimeInterval(self.refreshLifetime.components.seconds))
        let rotation: Rotation = try await self.client.withTransaction(logger: self.logger) { connection in
            // The family row lock serializes refreshes of one family: of two racing refreshes
            // with the same token, the second sees it rotated (and revokes the family). The
            // device row lock orders a refresh and a revocation: no token is signed for a
            // device whose revocation has committed, nor issued past one that is under way.
            let rows = try await connection.query(
                """
                SELECT f.tenant_id, f.device_id, f.revoked_at IS NOT NULL OR d.revoked_at IS NOT NULL, d.scopes,
                       t.rotated_at IS NOT NULL, t.expires_at <= now() OR f.expires_at <= now(), f.expires_at
                FROM refresh_tokens t
                JOIN refresh_families f ON f.family_id = t.family_id
                JOIN devices d ON d.device_id = f.device_id
                WHERE t.token_sha256 = \(Self.digest(token)) AND t.family_id = \(familyID)
                FOR UPDATE OF f, t, d
                """,
                logger: self.logger
            )
            var found: (String, String, Bool, [String], Bool, Bool, Date)?
            for try await row in rows.decode((String, String, Bool, [String], Bool, Bool, Date).self) { found = row }
            guard let (tenant, device, revoked, scopes, rotated, expired, familyExpires) = found else { return .unknown }
            nextExpires = min(nextExpires, familyExpires)
            if revoked { return .revoked }
            if rotated {
                try await connection.query(
                    "UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'refresh token reused' WHERE family_id = \(familyID)",
                    logger: self.logger
                )
                return .reused
            }
            if expired { return .expired }
            try await connection.query("UPDATE refresh_tokens SET rotated_at = now() WHERE token_sha256 = \(Self.digest(token))", logger: self.logger)
            try await connection.query(
                "INSERT INTO refresh_tokens (token_sha256, family_id, expires_at) VALUES (\(Self.digest(next)), \(familyID), \(nextExpires))",
                logger: self.logger
            )
            return .rotated(tenant: tenant, device: device, scopes: scopes)
        }
        switch rotation {
        case .unknown: throw APIError(.authInvalid, "unknown refresh token")
        case .revoked: throw APIError(.authInvalid, "the refresh token was revoked; enrol the device again")
        case .expired: throw APIError(.authExpired, "the refresh token has expired; enrol the device again")
        case .reused:
            self.logger.warning("refresh token reused: family revoked", metadata: ["family": "\(familyID)"])
            throw APIError(
                .authInvalid,
                "the refresh token was already used; every token of this sign-in is revoked, enrol the device again"
            )
        case .rotated(let tenant, let device, let scopes):
            return try await self.pair(tenant: tenant, device: device, scopes: scopes, refresh: next, refreshExpires: nextExpires)
        }
    }

    /// The token pair of a new sign-in.
    func pair(tenant: String, signIn: NewSignIn, scopes: [String]) async throws -> TokenPair {
        try await self.pair(tenant: tenant, device: signIn.deviceID, scopes: scopes, refresh: signIn.refresh, refreshExpires: signIn.refreshExpires)
    }

    private func pair(
        tenant: String,
        device: String,
        scopes: [String],
        refresh: String,
        refreshExpires: Date
    ) async throws -> TokenPair {
        let granted = Set(scopes.compactMap(Scope.init(rawValue:)))
        let access = try await self.signer.sign(tenant: tenant, subject: device, scopes: granted, lifetime: self.accessLifetime)
        return TokenPair(
            accessToken: access,
            accessLifetime: self.accessLifetime,
            refreshToken: refresh,
            refreshExpiresAt: refreshExpires,
            deviceID: device,
            tenantID: tenant,
            scopes: granted.sorted()
        )
    }

    private static func refreshToken(family: String) -> String {
        "sdr_\(family)_\(randomHex(bytes: 32))"
    }

    // MARK: Administration

    /// The devices of `tenant`, newest first.
    func devices(tenant: String, limit: Int) async throws -> [Device] {
        let rows = try await self.client.query(
            """
            SELECT device_id, name, platform, scopes, created_at, revoked_at, person FROM devices
            WHERE tenant_id = \(tenant) ORDER BY created_at DESC, device_id LIMIT \(limit)
            """,
            logger: self.logger
        )
        var devices: [Device] = []
        for try await (id, name, platform, scopes, created, revoked, person) in rows.decode(
            (String, String, String?, [String], Date, Date?, String?).self
        ) {
            devices.append(Self.device(id, name, platform, scopes, created, revoked, person))
        }
        return devices
    }

    /// Revokes a device of `tenant` and every sign-in of it (idempotent: a revoked device keeps
    /// its first revocation time); nil when the tenant has no such device.
    func revoke(device: String, tenant: String) async throws -> Device? {
        try await self.client.withTransaction(logger: self.logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE devices SET revoked_at = coalesce(revoked_at, now())
                WHERE device_id = \(device) AND tenant_id = \(tenant)
                RETURNING device_id, name, platform, scopes, created_at, revoked_at, person
                """,
                logger: self.logger
            )
            var found: Device?
            for try await (id, name, platform, scopes, created, revoked, person) in rows.decode(
                (String, String, String?, [String], Date, Date?, String?).self
            ) {
                found = Self.device(id, name, platform, scopes, created, revoked, person)
            }
            guard found != nil else { return nil }
            try await connection.query(
                """
                UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'device revoked'
                WHERE device_id = \(device) AND revoked_at IS NULL
                """,
                logger: self.logger
            )
            // Its workers (seed 004's registrations: the device is the principal) are the tenant's again.
            try await connection.query("DELETE FROM worker_owners WHERE tenant_id = \(tenant) AND owner = \(device)", logger: self.logger)
            return found
        }
    }

    /// Revokes the unused codes among `codes` of `tenant`; how many were.
    func revoke(codes: [String], tenant: String) async throws -> Int {
        let digests = codes.map { Array(SHA256.hash(data: Array($0.utf8))) }.map { ByteBuffer(bytes: $0) }
        let rows = try await self.client.write(
            """
            UPDATE enrolment_codes SET revoked_at = now()
            WHERE tenant_id = \(tenant) AND code_sha256 = ANY(\(digests)) AND used_at IS NULL AND revoked_at IS NULL
            RETURNING 1
            """,
            logger: self.logger
        )
        return rows.count
    }

    private static func device(
        _ id: String,
        _ name: String,
        _ platform: String?,
        _ scopes: [String],
        _ created: Date,
        _ revoked: Date?,
        _ person: String?
    ) -> Device {
        Device(
            deviceID: id,
            name: name,
            platform: platform,
            person: person,
            scopes: scopes.compactMap(Scope.init(rawValue:)),
            createdAt: created,
            revokedAt: revoked
        )
    }

    static func digest(_ secret: String) -> ByteBuffer {
        ByteBuffer(bytes: Array(SHA256.hash(data: Array(secret.utf8))))
    }
}

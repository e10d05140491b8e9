import Contracts
import ControlAPIContract
import Foundation
import Logging
import ServiceKit

/// Sign-in and devices: the signing key's JWKS, enrolment codes, device registration and token
/// refresh, revocation, and sign-in through an OpenID Connect provider (`+oidc`).
struct AuthHandler: Sendable {
    let signer: AccessTokenSigner
    let devices: DeviceAuthority
    /// Sign-in through an OpenID Connect provider; nil when not configured.
    let oidc: OIDCSignIn?
    /// Announces a revoked device to every service.
    let revocations: RevocationBus
    /// Registrations, refreshes and sign-ins per source address, on this replica: asked
    /// first, so a flood is refused without a write.
    let authLimiter: KeyedTokenBuckets
    /// The same limit across every replica (Postgres, ``signInBucketsTable``).
    let signIns: PostgresTokenBuckets
    let logger: Logger

    /// The table of ``signIns`` (control-api's schema, migration 10).
    static let signInBucketsTable = "sign_in_buckets"
}

extension AuthHandler {
    func getJWKS(_ input: Operations.GetJWKS.Input) async throws -> Operations.GetJWKS.Output {
        let key = Components.Schemas.Jwk(
            kty: "EC",
            crv: "P-256",
            x: self.signer.publicCoordinates.x,
            y: self.signer.publicCoordinates.y,
            kid: self.signer.keyID,
            use: "sig",
            alg: "ES256"
        )
        return .ok(.init(body: .json(.init(keys: [key]))))
    }

    func createEnrolmentCodes(_ input: Operations.CreateEnrolmentCodes.Input) async throws -> Operations.CreateEnrolmentCodes.Output {
        let identity = try Caller.person()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try InputCheck.range(body.count, "count", 1...100)
        try InputCheck.range(body.ttlSeconds, "ttlSeconds", 60...2_592_000)
        if let scopes = body.scopes, scopes.isEmpty {
            throw APIError(.invalidRequest, "scopes must name at least one scope (or be left out)")
        }
        let scopes = body.scopes.map { Set($0.compactMap { Scope(rawValue: $0.rawValue) }) } ?? DeviceAuthority.defaultScopes
        let created = try await self.devices.createCodes(
            tenant: identity.tenant,
            createdBy: identity.subject,
            count: body.count ?? 1,
            scopes: scopes,
            lifetime: .seconds(body.ttlSeconds ?? 86_400)
        )
        return .created(
            .init(
                body: .json(
                    .init(
                        tenantId: identity.tenant,
                        codes: created.codes,
                        scopes: scopes.sorted().compactMap { Components.Schemas.Scope(rawValue: $0.rawValue) },
                        expiresAt: created.expiresAt
                    )
                )
            )
        )
    }

    /// Unauthenticated and each a few queries: limited per source address, across every
    /// replica (``signIns``), this replica's own buckets asked first.
    func limitBySource() async throws {
        let key = ClientAddress.limitKey(RequestScope.current?.clientAddress ?? "local")
        let wait: Duration?
        if let local = self.authLimiter.take(key) { wait = local } else { wait = try await self.signIns.take(key) }
        guard let wait else { return }
        throw APIError(.rateLimited, "too many sign-ins from this address; retry later", retryAfterSeconds: wait.retryAfterSeconds)
    }

    func registerDevice(_ input: Operations.RegisterDevice.Input) async throws -> Operations.RegisterDevice.Output {
        try await self.limitBySource()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try InputCheck.text(body.code, "code", max: 128)
        try InputCheck.text(body.deviceName, "deviceName", max: 200)
        if let platform = body.platform { try InputCheck.text(platform, "platform", max: 64, required: false) }
        let pair = try await self.devices.register(code: body.code, deviceName: body.deviceName, platform: body.platform)
        return .created(.init(body: .json(.init(pair))))
    }

    func refreshToken(_ input: Operations.RefreshToken.Input) async throws -> Operations.RefreshToken.Output {
        try await self.limitBySource()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try InputCheck.text(body.refreshToken, "refreshToken", max: 512)
        return .ok(.init(body: .json(.init(try await self.devices.refresh(body.refreshToken)))))
    }

    // MARK: Revocation

    func revokeEnrolmentCodes(_ input: Operations.RevokeEnrolmentCodes.Input) async throws -> Operations.RevokeEnrolmentCodes.Output {
        let identity = try Caller.person()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        guard (1...100).contains(body.codes.count) else { throw APIError(.invalidRequest, "codes must name 1 to 100 codes") }
        for code in body.codes { try InputCheck.text(code, "codes[]", max: 128) }
        let revoked = try await self.devices.revoke(codes: body.codes, tenant: identity.tenant)
        return .ok(.init(body: .json(.init(revoked: revoked))))
    }

    func listDevices(_ input: Operations.ListDevices.Input) async throws -> Operations.ListDevices.Output {
        let identity = try Caller.person()
        try InputCheck.range(input.query.limit, "limit", 1...500)
        let devices = try await self.devices.devices(tenant: identity.tenant, limit: input.query.limit ?? 100)
        return .ok(.init(body: .json(.init(devices: devices.map(Components.Schemas.Device.init)))))
    }

    /// Revokes in Postgres (refresh dies at once), then announces it (access tokens and
    /// WebSockets everywhere within seconds); a failed announcement is a 503 to retry.
    func revokeDevice(_ input: Operations.RevokeDevice.Input) async throws -> Operations.RevokeDevice.Output {
        let identity = try Caller.person()
        try InputCheck.text(input.path.deviceId, "deviceId", max: 64)
        guard let device = try await self.devices.revoke(device: input.path.deviceId, tenant: identity.tenant), let revokedAt = device.revokedAt
        else {
            throw APIError(.notFound, "no such device")
        }
        do {
            try await self.revocations.announce(tenant: identity.tenant, device: device.deviceID, revokedAt: revokedAt)
        } catch {
            RequestScope.current?.logger.warning("revocation not announced", metadata: ["error": "\(String(reflecting: error))"])
            throw APIError(
                .serviceUnavailable,
                "the device is revoked but not every service knows yet; retry to finish",
                retryAfterSeconds: 1
            )
        }
        RequestScope.current?.logger.notice("device revoked", metadata: ["device": "\(device.deviceID)", "by": "\(identity.subject)"])
        return .ok(.init(body: .json(.init(device))))
    }
}

import Contracts
import ControlAPIContract
import Foundation
import ServiceKit

extension ControlAPIHandler {
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
        try Self.checkRange(body.count, "count", 1...100)
        try Self.checkRange(body.ttlSeconds, "ttlSeconds", 60...2_592_000)
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

    /// Unauthenticated and each a few queries: limited per source address.
    private func limitBySource() throws(APIError) {
        let source = RequestScope.current?.clientAddress ?? "local"
        if let wait = self.authLimiter.take(source) {
            throw APIError(.rateLimited, "too many sign-ins from this address; retry later", retryAfterSeconds: wait.retryAfterSeconds)
        }
    }

    func registerDevice(_ input: Operations.RegisterDevice.Input) async throws -> Operations.RegisterDevice.Output {
        try self.limitBySource()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try Self.checkText(body.code, "code", max: 128)
        try Self.checkText(body.deviceName, "deviceName", max: 200)
        if let platform = body.platform { try Self.checkText(platform, "platform", max: 64, required: false) }
        let pair = try await self.devices.register(code: body.code, deviceName: body.deviceName, platform: body.platform)
        return .created(.init(body: .json(pair)))
    }

    func refreshToken(_ input: Operations.RefreshToken.Input) async throws -> Operations.RefreshToken.Output {
        try self.limitBySource()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try Self.checkText(body.refreshToken, "refreshToken", max: 512)
        return .ok(.init(body: .json(try await self.devices.refresh(body.refreshToken))))
    }
}

public import Contracts
import Foundation
import JWTKit

/// Verifies access tokens: ES256 only (the header's `alg` is checked before anything else, so
/// `none` and HS256-signed-with-the-public-key tokens never reach a verifier), a known key id,
/// a valid signature, not expired, the configured issuer and audience, a tenant and known scopes.
public struct AccessTokenVerifier: Sendable {
    private let keys: JWTKeyCollection
    private let keyIDs: Set<String>
    public let issuer: String
    public let audience: String
    /// Revoked devices: their tokens are refused.
    public let revocations: RevocationList?

    /// - Parameter publicKeys: key id → PEM of an ES256 public key.
    public init(
        publicKeys: [String: String],
        issuer: String,
        audience: String,
        revocations: RevocationList? = nil
    ) async throws(ServiceKitError) {
        let keys = JWTKeyCollection()
        for (keyID, pem) in publicKeys {
            do {
                await keys.add(ecdsa: try ES256PublicKey(pem: pem), kid: JWKIdentifier(string: keyID))
            } catch {
                throw ServiceKitError(.token, "key \(keyID) is not an ES256 public key in PEM: \(error)")
            }
        }
        self.keys = keys
        self.keyIDs = Set(publicKeys.keys)
        self.issuer = issuer
        self.audience = audience
        self.revocations = revocations
    }

    /// The identity of `token`, which must hold at least one of `scopes` when any are named
    /// (403 `PermissionDenied` otherwise).
    public func verify(_ token: String, requiring scopes: [Scope]) async throws(APIError) -> AccessIdentity {
        let identity = try await self.verify(token)
        try identity.require(anyOf: scopes)
        return identity
    }

    /// The identity a token grants.
    /// - Throws: `AuthExpired` for an expired token, `AuthInvalid` for anything else wrong.
    public func verify(_ token: String) async throws(APIError) -> AccessIdentity {
        let claims = try await self.claims(of: token, audience: self.audience)
        guard claims.swarm == nil, claims.agent == nil else {
            throw APIError(.authInvalid, "an agent session token is not an access token")
        }
        let scopes = claims.scope.split(separator: " ").compactMap { Scope(rawValue: String($0)) }
        let identity = AccessIdentity(tenant: claims.tenant, subject: claims.subject.value, scopes: Set(scopes), issuedAt: claims.issuedAt.value)
        if let revocations = self.revocations, revocations.isRevoked(identity) {
            throw APIError(.authInvalid, "the device was revoked; enrol it again")
        }
        return identity
    }

    /// The audience of agent session tokens, given the operators' one.
    public static func agentAudience(of audience: String) -> String { audience + "/agent" }

    /// The agent session an agent session token (``AccessTokenSigner/signAgentSession(tenant:session:swarm:agent:lifetime:now:)``)
    /// grants: the agent audience, a swarm and an agent, a session not ended (ending one
    /// revokes its id).
    /// - Throws: `AuthExpired` for an expired token, `AuthInvalid` for anything else wrong.
    public func verifyAgentSession(_ token: String) async throws(APIError) -> AgentSessionIdentity {
        let claims = try await self.claims(of: token, audience: Self.agentAudience(of: self.audience))
        guard let swarm = claims.swarm, let agent = claims.agent, !swarm.isEmpty, !agent.isEmpty else {
            throw APIError(.authInvalid, "the agent session token names no swarm or agent")
        }
        if let revocations = self.revocations, revocations.isRevoked(tenant: claims.tenant, subject: claims.subject.value) {
            throw APIError(.authInvalid, "the agent session has ended; open a new one")
        }
        return AgentSessionIdentity(tenant: claims.tenant, session: claims.subject.value, swarm: swarm, agent: agent)
    }

    /// The verified claims of `token` for `audience`.
    private func claims(of token: String, audience: String) async throws(APIError) -> AccessClaims {
        let header = try Self.header(of: token)
        guard header.alg == "ES256" else {
            throw APIError(.authInvalid, "token algorithm \(header.alg ?? "none") is not accepted")
        }
        guard let keyID = header.kid, self.keyIDs.contains(keyID) else {
            throw APIError(.authInvalid, "token key id is unknown")
        }
        let claims: AccessClaims
        do {
            claims = try await self.keys.verify(token, as: AccessClaims.self)
        } catch let error as JWTError where error.errorType == .claimVerificationFailure && error.failedClaim is ExpirationClaim {
            throw APIError(.authExpired, "the access token has expired")
        } catch {
            throw APIError(.authInvalid, "the access token is not valid")
        }
        guard claims.issuer.value == self.issuer else {
            throw APIError(.authInvalid, "the access token is from another issuer")
        }
        guard claims.audience.value == [audience] else {
            throw APIError(.authInvalid, "the access token is for another audience")
        }
        guard !claims.tenant.isEmpty, !claims.subject.value.isEmpty else {
            throw APIError(.authInvalid, "the access token names no tenant or subject")
        }
        return claims
    }

    private struct Header: Decodable {
        var alg: String?
        var kid: String?
    }

    private static func header(of token: String) throws(APIError) -> Header {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Data(base64URLEncoded: parts[0]),
            let header = try? JSONDecoder().decode(Header.self, from: data)
        else {
            throw APIError(.authInvalid, "the access token is malformed")
        }
        return header
    }
}

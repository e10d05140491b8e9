public import Contracts
public import Foundation
import JWTKit

/// Signs access tokens with an ES256 private key: what the admin command `swarmdeck token mint`
/// and, later, control-api's token endpoints use.
public struct AccessTokenSigner: Sendable {
    private let keys: JWTKeyCollection
    public let keyID: String
    public let issuer: String
    public let audience: String
    /// The public half as a JSON Web Key's coordinates (RFC 7518 §6.2.1, base64url), for a
    /// JWKS document.
    public let publicCoordinates: (x: String, y: String)

    public init(privateKeyPEM: String, keyID: String, issuer: String, audience: String) async throws(ServiceKitError) {
        let keys = JWTKeyCollection()
        let key: ES256PrivateKey
        do {
            key = try ES256PrivateKey(pem: privateKeyPEM)
        } catch {
            throw ServiceKitError(.token, "the signing key is not an ES256 private key in PEM: \(error)")
        }
        guard let coordinates = key.publicKey.parameters else {
            throw ServiceKitError(.token, "the signing key has no public coordinates")
        }
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: keyID))
        self.publicCoordinates = coordinates
        self.keys = keys
        self.keyID = keyID
        self.issuer = issuer
        self.audience = audience
    }

    /// A signed token for `subject` of `tenant` with `scopes`, valid for `lifetime`.
    public func sign(
        tenant: String,
        subject: String,
        scopes: Set<Scope>,
        lifetime: Duration = .seconds(900),
        now: Date = Date()
    ) async throws(ServiceKitError) -> String {
        try await self.sign(
            audience: self.audience,
            subject: subject,
            tenant: tenant,
            scope: scopes.map(\.rawValue).sorted().joined(separator: " "),
            lifetime: lifetime,
            now: now
        )
    }

    /// A token for one agent session (``AgentSessionIdentity``): audience
    /// ``AccessTokenVerifier/agentAudience(of:)``, so no operator operation accepts it, and
    /// no scopes; `subject` is the session id.
    public func signAgentSession(
        tenant: String,
        session: String,
        swarm: String,
        agent: String,
        lifetime: Duration,
        now: Date = Date()
    ) async throws(ServiceKitError) -> String {
        try await self.sign(
            audience: AccessTokenVerifier.agentAudience(of: self.audience),
            subject: session,
            tenant: tenant,
            scope: "",
            swarm: swarm,
            agent: agent,
            lifetime: lifetime,
            now: now
        )
    }

    private func sign(
        audience: String,
        subject: String,
        tenant: String,
        scope: String,
        swarm: String? = nil,
        agent: String? = nil,
        lifetime: Duration,
        now: Date
    ) async throws(ServiceKitError) -> String {
        let claims = AccessClaims(
            issuer: self.issuer,
            audience: audience,
            subject: subject,
            expiration: now.addingTimeInterval(TimeInterval(lifetime.components.seconds)),
            issuedAt: now,
            id: UUID().uuidString.lowercased(),
            tenant: tenant,
            scope: scope,
            swarm: swarm,
            agent: agent
        )
        do {
            return try await self.keys.sign(claims, kid: JWKIdentifier(string: self.keyID))
        } catch {
            throw ServiceKitError(.token, "signing failed: \(error)")
        }
    }

    /// A new ES256 key pair as PEM (private, public).
    public static func generateKeyPair() -> (privateKey: String, publicKey: String) {
        let key = ES256PrivateKey()
        return (key.pemRepresentation, key.publicKey.pemRepresentation)
    }
}

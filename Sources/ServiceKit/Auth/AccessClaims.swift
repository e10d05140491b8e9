public import JWTKit

/// The claims of a Swarmdeck access token.
public struct AccessClaims: JWTPayload, Equatable {
    public var issuer: IssuerClaim
    public var audience: AudienceClaim
    public var subject: SubjectClaim
    public var expiration: ExpirationClaim
    public var issuedAt: IssuedAtClaim
    /// The token id, for revocation lists and logs.
    public var id: IDClaim
    /// The tenant the token is for.
    public var tenant: String
    /// Space-separated scopes (RFC 8693 style).
    public var scope: String
    /// An agent session token's swarm (absent from operators' tokens).
    public var swarm: String?
    /// An agent session token's agent (absent from operators' tokens).
    public var agent: String?

    enum CodingKeys: String, CodingKey {
        case issuer = "iss"
        case audience = "aud"
        case subject = "sub"
        case expiration = "exp"
        case issuedAt = "iat"
        case id = "jti"
        case tenant = "tid"
        case scope
        case swarm = "swm"
        case agent = "agt"
    }

    public init(
        issuer: String,
        audience: String,
        subject: String,
        expiration: Date,
        issuedAt: Date,
        id: String,
        tenant: String,
        scope: String,
        swarm: String? = nil,
        agent: String? = nil
    ) {
        self.issuer = IssuerClaim(value: issuer)
        self.audience = AudienceClaim(value: [audience])
        self.subject = SubjectClaim(value: subject)
        self.expiration = ExpirationClaim(value: expiration)
        self.issuedAt = IssuedAtClaim(value: issuedAt)
        self.id = IDClaim(value: id)
        self.tenant = tenant
        self.scope = scope
        self.swarm = swarm
        self.agent = agent
    }

    /// Checks expiry; issuer and audience are checked by ``AccessTokenVerifier`` against its
    /// configuration.
    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try self.expiration.verifyNotExpired()
    }
}

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

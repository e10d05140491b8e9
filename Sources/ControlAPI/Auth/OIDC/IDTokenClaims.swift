import Foundation
import JWTKit
import ServiceKit

/// The claims of an OpenID Connect ID token, as its issuer signed them. jwt-kit checks the
/// signature; ``check(issuer:clientID:nonce:now:)`` checks the rest (OpenID Connect Core
/// §3.1.3.7), apart from I/O so that it has unit tests of its own.
struct IDTokenClaims: JWTPayload, Equatable {
    /// A claim's value, as far as sign-in reads it.
    enum Value: Sendable, Equatable {
        case string(String)
        case strings([String])
        case other
    }

    var issuer: String?
    var subject: String?
    var audience: [String]
    var expires: Date?
    var issuedAt: Date?
    var nonce: String?
    var authorizedParty: String?
    /// Every claim that is a string or an array of strings (`email`, `groups`, …).
    var claims: [String: Value]

    init(
        issuer: String?,
        subject: String?,
        audience: [String],
        expires: Date?,
        issuedAt: Date?,
        nonce: String?,
        authorizedParty: String? = nil,
        claims: [String: Value] = [:]
    ) {
        self.issuer = issuer
        self.subject = subject
        self.audience = audience
        self.expires = expires
        self.issuedAt = issuedAt
        self.nonce = nonce
        self.authorizedParty = authorizedParty
        self.claims = claims
    }

    /// What a token's claims fail.
    struct Refusal: Error, Equatable {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// How far clocks may disagree.
    static let leeway: TimeInterval = 60

    /// Checks what the signature does not: the issuer is the one configured (exactly), the
    /// audience holds our client id (and, with several audiences, `azp` is ours), the token
    /// has not expired and was not issued in the future, and the nonce is this login's.
    func check(issuer: String, clientID: String, nonce: String, now: Date) throws(Refusal) {
        guard self.issuer == issuer else { throw Refusal("the ID token's issuer is not \(issuer)") }
        guard let subject = self.subject, !subject.isEmpty, subject.utf8.count <= 255 else {
            throw Refusal("the ID token names no subject")
        }
        guard self.audience.contains(clientID) else { throw Refusal("the ID token is not for this client") }
        if self.audience.count > 1, self.authorizedParty != clientID {
            throw Refusal("the ID token has several audiences and was not issued to this client (azp)")
        }
        if let party = self.authorizedParty, party != clientID { throw Refusal("the ID token was issued to another client (azp)") }
        guard let expires = self.expires else { throw Refusal("the ID token has no expiry") }
        guard expires.timeIntervalSince(now) > -Self.leeway else { throw Refusal("the ID token has expired") }
        guard let issuedAt = self.issuedAt, issuedAt.timeIntervalSince(now) < Self.leeway else {
            throw Refusal("the ID token has no issue time, or one in the future")
        }
        guard let mine = self.nonce, constantTimeEqual(Array(mine.utf8), Array(nonce.utf8)) else {
            throw Refusal("the ID token's nonce is not this sign-in's")
        }
    }

    /// Who signed in, for people: the email when the provider says it verified it
    /// (`email_verified` true), else the subject.
    var person: String {
        if case .string(let email) = self.claims["email"], !email.isEmpty, self.claims["email_verified"] == .string("true") {
            return String(email.prefix(320))
        }
        return self.subject ?? ""
    }

    // MARK: Codable

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The claims read, at most; a token with more is refused.
    static let maxClaims = 200

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        guard container.allKeys.count <= Self.maxClaims else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "more than \(Self.maxClaims) claims"))
        }
        func string(_ name: String) -> String? { try? container.decodeIfPresent(String.self, forKey: Key(stringValue: name)) }
        func date(_ name: String) -> Date? {
            (try? container.decodeIfPresent(Double.self, forKey: Key(stringValue: name))).flatMap { $0 }.map(Date.init(timeIntervalSince1970:))
        }
        self.issuer = string("iss")
        self.subject = string("sub")
        self.nonce = string("nonce")
        self.authorizedParty = string("azp")
        self.expires = date("exp")
        self.issuedAt = date("iat")
        if let one = string("aud") {
            self.audience = [one]
        } else {
            self.audience = (try? container.decodeIfPresent([String].self, forKey: Key(stringValue: "aud"))).flatMap { $0 } ?? []
        }
        var claims: [String: Value] = [:]
        for key in container.allKeys {
            if let text = try? container.decode(String.self, forKey: key) {
                claims[key.stringValue] = .string(text)
            } else if let list = try? container.decode([String].self, forKey: key) {
                claims[key.stringValue] = .strings(list)
            } else if let flag = try? container.decode(Bool.self, forKey: key) {
                claims[key.stringValue] = .string(flag ? "true" : "false")
            } else {
                claims[key.stringValue] = .other
            }
        }
        self.claims = claims
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encodeIfPresent(self.issuer, forKey: Key(stringValue: "iss"))
        try container.encodeIfPresent(self.subject, forKey: Key(stringValue: "sub"))
        try container.encode(self.audience, forKey: Key(stringValue: "aud"))
        try container.encodeIfPresent(self.expires?.timeIntervalSince1970, forKey: Key(stringValue: "exp"))
        try container.encodeIfPresent(self.issuedAt?.timeIntervalSince1970, forKey: Key(stringValue: "iat"))
        try container.encodeIfPresent(self.nonce, forKey: Key(stringValue: "nonce"))
        try container.encodeIfPresent(self.authorizedParty, forKey: Key(stringValue: "azp"))
    }

    /// The claims are checked by ``check(issuer:clientID:nonce:now:)``, with this login's values.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOHTTP1
import ServiceKit
import ServiceLifecycle

/// The OpenID Connect provider, as control-api talks to it: its discovery document and keys
/// (each kept an hour; the keys fetched again, at most once a minute, when a token names one
/// not known), the code exchange (with the PKCE verifier) and the ID token's signature.
/// A service only so that its HTTP client is shut down when control-api stops.
actor OIDCProvider: Service {
    struct Metadata: Sendable, Decodable {
        var issuer: String
        var authorizationEndpoint: String
        var tokenEndpoint: String
        var jwksURI: String
        var codeChallengeMethodsSupported: [String]?

        enum CodingKeys: String, CodingKey {
            case issuer
            case authorizationEndpoint = "authorization_endpoint"
            case tokenEndpoint = "token_endpoint"
            case jwksURI = "jwks_uri"
            case codeChallengeMethodsSupported = "code_challenge_methods_supported"
        }
    }

    /// Why the provider could not be used: said to the person (never a secret), logged in full.
    struct Failure: Error, CustomStringConvertible {
        var description: String
        /// The `error` the client is sent on to its return URI with.
        var code: String
        init(_ description: String, code: String = "provider_error") {
            self.description = description
            self.code = code
        }
    }

    let settings: OIDCSettings
    private let client: HTTPClient
    private let logger: Logger
    private var metadata: (value: Metadata, fetched: ContinuousClock.Instant)?
    private var keys: (collection: JWTKeyCollection, ids: Set<String>, fetched: ContinuousClock.Instant)?

    /// How long the discovery document and keys are kept.
    static let cacheLifetime: Duration = .seconds(3600)
    /// The soonest the keys are fetched again for a key id not known.
    static let keyRefetchInterval: Duration = .seconds(60)
    /// The most bytes read of any answer of the provider.
    static let maxAnswerBytes = 1 << 20
    static let timeout: TimeAmount = .seconds(10)
    /// The signature algorithms accepted in an ID token's header (no `none`, no HMAC).
    static let algorithms: Set<String> = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"]

    init(settings: OIDCSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        // Redirects refused: an answer that moves is not the provider's.
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(10))
        self.client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    func run() async throws {
        try? await gracefulShutdown()
        try await self.client.shutdown()
    }

    /// The discovery document: its issuer must be the configured one, its endpoints https (or
    /// http on this machine).
    func discovery() async throws(Failure) -> Metadata {
        if let metadata, metadata.fetched.duration(to: .now) < Self.cacheLifetime { return metadata.value }
        var base = self.settings.issuer
        while base.hasSuffix("/") { base.removeLast() }
        let document: Metadata = try await self.json(Metadata.self, from: HTTPClientRequest(url: base + "/.well-known/openid-configuration"))
        guard document.issuer == self.settings.issuer else {
            throw Failure("the provider's discovery document names the issuer \(document.issuer), not \(self.settings.issuer)")
        }
        for endpoint in [document.authorizationEndpoint, document.tokenEndpoint, document.jwksURI]
        where !OIDCSettings.isProviderURL(endpoint) {
            throw Failure("the provider's endpoint \(endpoint) is neither https nor on this machine")
        }
        self.metadata = (document, .now)
        return document
    }

    /// Trades the provider's `code` for its ID token, proving the login with `verifier`.
    func exchange(code: String, verifier: String) async throws(Failure) -> String {
        let metadata = try await self.discovery()
        var form: [(String, String)] = [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", self.settings.redirectURI), ("code_verifier", verifier),
        ]
        var request = HTTPClientRequest(url: metadata.tokenEndpoint)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        if let secret = self.settings.clientSecret {
            // RFC 6749 §2.3.1: each part form-encoded, then Basic.
            let pair = FormEncoding.escape(self.settings.clientID) + ":" + FormEncoding.escape(secret)
            request.headers.add(name: "Authorization", value: "Basic " + Data(pair.utf8).base64EncodedString())
        } else {
            form.append(("client_id", self.settings.clientID))
        }
        request.body = .bytes(ByteBuffer(string: FormEncoding.encode(form)))
        struct TokenAnswer: Decodable {
            var idToken: String?
            var error: String?
            var errorDescription: String?
            enum CodingKeys: String, CodingKey {
                case idToken = "id_token"
                case error
                case errorDescription = "error_description"
            }
        }
        let answer = try await self.json(TokenAnswer.self, from: request, acceptingErrors: true)
        if let error = answer.error {
            throw Failure("the provider refused the code: \(error)\(answer.errorDescription.map { " (\($0.prefix(200)))" } ?? "")")
        }
        guard let token = answer.idToken, !token.isEmpty else { throw Failure("the provider answered no ID token") }
        return token
    }

    /// The claims of `idToken` once its signature checks out against the provider's keys.
    func verifiedClaims(of idToken: String) async throws(Failure) -> IDTokenClaims {
        let header = try Self.header(of: idToken)
        guard let algorithm = header.alg, Self.algorithms.contains(algorithm) else {
            throw Failure("the ID token is signed with \(header.alg ?? "no algorithm"), which is not accepted")
        }
        var keys = try await self.currentKeys(refreshingFor: nil)
        if let kid = header.kid, !keys.ids.contains(kid) {
            keys = try await self.currentKeys(refreshingFor: kid)
            guard keys.ids.contains(kid) else { throw Failure("the ID token names a key the provider does not publish") }
        }
        do {
            return try await keys.collection.verify(idToken, as: IDTokenClaims.self)
        } catch {
            self.logger.notice("ID token refused", metadata: ["error": "\(String(reflecting: error))"])
            throw Failure("the ID token's signature does not verify")
        }
    }

    /// The keys, fetched when none are kept, when they are older than the cache lifetime, or
    /// (at most once a minute) when a token names `kid` and they do not hold it.
    private func currentKeys(refreshingFor kid: String?) async throws(Failure) -> (collection: JWTKeyCollection, ids: Set<String>) {
        if let keys {
            let age = keys.fetched.duration(to: .now)
            let fresh = age < Self.cacheLifetime && (kid == nil || age < Self.keyRefetchInterval)
            if fresh { return (keys.collection, keys.ids) }
        }
        let metadata = try await self.discovery()
        let set = try await self.json(JWKS.self, from: HTTPClientRequest(url: metadata.jwksURI))
        let collection = JWTKeyCollection()
        var ids: Set<String> = []
        for jwk in set.keys.prefix(100) {
            // A key we cannot use (no id, an unknown type) is skipped, not fatal.
            guard let id = jwk.keyIdentifier?.string, (try? await collection.add(jwk: jwk)) != nil else { continue }
            ids.insert(id)
        }
        guard !ids.isEmpty else { throw Failure("the provider publishes no key this service can use") }
        self.keys = (collection, ids, .now)
        return (collection, ids)
    }

    private static func header(of token: String) throws(Failure) -> (alg: String?, kid: String?) {
        struct Header: Decodable {
            var alg: String?
            var kid: String?
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].utf8.count <= 4096, let data = Data(base64URLEncoded: parts[0]),
            let header = try? JSONDecoder().decode(Header.self, from: data)
        else { throw Failure("the ID token is not a signed JWT") }
        return (header.alg, header.kid)
    }

    /// GETs (or sends) `request` and decodes its JSON answer; past ``maxAnswerBytes``, a
    /// status other than 200 (or 400/401 with `acceptingErrors`, the token endpoint's errors),
    /// or JSON of another shape, it fails.
    private func json<Answer: Decodable>(
        _ type: Answer.Type,
        from request: HTTPClientRequest,
        acceptingErrors: Bool = false
    ) async throws(Failure) -> Answer {
        let body: ByteBuffer
        let status: HTTPResponseStatus
        do {
            let response = try await self.client.execute(request, timeout: Self.timeout)
            status = response.status
            body = try await response.body.collect(upTo: Self.maxAnswerBytes)
        } catch {
            self.logger.warning("OpenID Connect provider unreachable", metadata: ["url": "\(request.url)", "error": "\(String(reflecting: error))"])
            throw Failure("the sign-in provider did not answer")
        }
        guard status == .ok || (acceptingErrors && (status == .badRequest || status == .unauthorized)) else {
            throw Failure("the sign-in provider answered \(status.code) at \(request.url)")
        }
        do {
            return try JSONDecoder().decode(Answer.self, from: Data(buffer: body))
        } catch {
            throw Failure("the sign-in provider's answer at \(request.url) is not what OpenID Connect says")
        }
    }
}

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
actor OIDCProvider: ReleasingService {
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

    /// Why a sign-in failed: `description` in full for the log, `shown` (fixed words, no
    /// address, answer or person) for the client's return URI.
    struct Failure: Error, CustomStringConvertible {
        var description: String
        /// The `error` the client is sent on to its return URI with.
        var code: String
        /// The `error_description` it is sent with.
        var shown: String

        init(_ description: String, code: String = "provider_error", shown: String? = nil) {
            self.description = description
            self.code = code
            self.shown =
                shown
                ?? (code == "no_scopes"
                    ? "none of your groups grants access here; ask your admin"
                    : "the sign-in provider's answer could not be used; try again or ask your admin")
        }
    }

    let settings: OIDCSettings
    private let client: HTTPClient
    private let logger: Logger
    private var metadata: (value: Metadata, fetched: ContinuousClock.Instant)?
    /// The provider's signing keys we can use, by key id, each read once into a collection of
    /// its own (the one its signatures are verified with).
    private var keys: (byID: [String: SigningKey], fetched: ContinuousClock.Instant)?

    /// A key of the provider's, and the collection holding it alone (as the default key).
    struct SigningKey: Sendable {
        var jwk: JWK
        var collection: JWTKeyCollection
    }

    /// How long the discovery document and keys are kept.
    static let cacheLifetime: Duration = .seconds(3600)
    /// The soonest the keys are fetched again for a key id not known.
    static let keyRefetchInterval: Duration = .seconds(60)
    /// The most bytes read of any answer of the provider.
    static let maxAnswerBytes = 1 << 20
    static let timeout: TimeAmount = .seconds(10)
    /// How long a connection to the provider is kept idle for the next request.
    static let idleTimeout: TimeAmount = .seconds(4)
    /// The signature algorithms accepted in an ID token's header (no `none`, no HMAC).
    static let algorithms: Set<String> = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"]

    init(settings: OIDCSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        // Redirects refused: an answer that moves is not the provider's.
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(10))
        // Idle connections let go before the common servers' keep-alive (uvicorn's and
        // Node's 5 s) ends them, so one is seldom taken as the server closes it.
        configuration.connectionPool = .init(idleTimeout: Self.idleTimeout)
        self.client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    func run() async throws {
        try? await gracefulShutdown()
        try await self.shutdown()
    }

    /// Shuts the HTTP client down (``run()`` does at control-api's shutdown).
    func shutdown() async throws {
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

    /// The claims of `idToken` once its signature checks out against the provider's keys: the
    /// key its `kid` names (any key that fits, without one), used only with the algorithm the
    /// header names when the key allows it (its own `alg`, when it has one, and its type).
    func verifiedClaims(of idToken: String) async throws(Failure) -> IDTokenClaims {
        let header = try Self.header(of: idToken)
        guard let algorithm = header.alg, Self.algorithms.contains(algorithm) else {
            throw Failure("the ID token is signed with \(header.alg ?? "no algorithm"), which is not accepted")
        }
        var keys = try await self.currentKeys(refreshingFor: nil)
        if let kid = header.kid, keys[kid] == nil {
            keys = try await self.currentKeys(refreshingFor: kid)
        }
        let candidates = (header.kid.map { keys[$0].map { [$0] } ?? [] } ?? Array(keys.values)).filter { Self.fits($0.jwk, algorithm) }
        guard !candidates.isEmpty else {
            throw Failure("the ID token names no key of the provider's that signs with \(algorithm)")
        }
        for key in candidates {
            do {
                return try await key.collection.verify(idToken, as: IDTokenClaims.self)
            } catch {
                self.logger.notice(
                    "ID token not verified with a key",
                    metadata: ["kid": "\(key.jwk.keyIdentifier?.string ?? "")", "error": "\(String(reflecting: error))"]
                )
            }
        }
        throw Failure("the ID token's signature does not verify")
    }

    /// Whether `jwk` may verify a signature made with `algorithm`: its own `alg` is that one, or
    /// it has none and its type is the algorithm's (RSA for RS/PS, EC for ES).
    static func fits(_ jwk: JWK, _ algorithm: String) -> Bool {
        if let own = jwk.algorithm { return own.rawValue == algorithm }
        switch algorithm.prefix(2) {
        case "RS", "PS": return jwk.keyType == .rsa
        case "ES": return jwk.keyType == .ecdsa
        default: return false
        }
    }

    /// The keys, fetched when none are kept, when they are older than the cache lifetime, or
    /// (at most once a minute) when a token names `kid` and they do not hold it. A key that is
    /// for encryption (`use` enc), has no id, or that jwt-kit cannot read is skipped, not fatal.
    private func currentKeys(refreshingFor kid: String?) async throws(Failure) -> [String: SigningKey] {
        if let keys {
            let age = keys.fetched.duration(to: .now)
            let fresh = age < Self.cacheLifetime && (kid == nil || age < Self.keyRefetchInterval)
            if fresh { return keys.byID }
        }
        let metadata = try await self.discovery()
        let body = try await self.answer(HTTPClientRequest(url: metadata.jwksURI))
        guard let set = try? JSONSerialization.jsonObject(with: body) as? [String: Any], let list = set["keys"] as? [Any] else {
            throw Failure("the provider's key set is not a JWKS")
        }
        var byID: [String: SigningKey] = [:]
        let decoder = JSONDecoder()
        for raw in list.prefix(100) {
            guard let fields = raw as? [String: Any], fields["use"] as? String != "enc",
                let data = try? JSONSerialization.data(withJSONObject: fields), let jwk = try? decoder.decode(JWK.self, from: data),
                let id = jwk.keyIdentifier?.string
            else { continue }
            let collection = JWTKeyCollection()
            guard (try? await collection.add(jwk: jwk, isDefault: true)) != nil else { continue }
            byID[id] = SigningKey(jwk: jwk, collection: collection)
        }
        guard !byID.isEmpty else { throw Failure("the provider publishes no key this service can use") }
        self.keys = (byID, .now)
        return byID
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

    /// GETs (or sends) `request` and decodes its JSON answer (``answer(_:acceptingErrors:)``).
    private func json<Answer: Decodable>(
        _ type: Answer.Type,
        from request: HTTPClientRequest,
        acceptingErrors: Bool = false
    ) async throws(Failure) -> Answer {
        let body = try await self.answer(request, acceptingErrors: acceptingErrors)
        do {
            return try JSONDecoder().decode(Answer.self, from: body)
        } catch {
            throw Failure("the sign-in provider's answer at \(request.url) is not what OpenID Connect says")
        }
    }

    /// Sends `request`, and once more on a new connection when the first is closed or reset
    /// before any answer: a kept-alive connection the provider closed just as it was taken. Sending a
    /// token request twice is safe: a code the provider took once it refuses again (RFC 6749
    /// §4.1.2), and the sign-in then fails as it would have.
    private func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        do {
            return try await self.client.execute(request, timeout: Self.timeout)
        } catch let error where Self.isClosedUnanswered(error) {
            self.logger.debug("OpenID Connect provider closed the connection before answering; sending again", metadata: ["url": "\(request.url)"])
            return try await self.client.execute(request, timeout: Self.timeout)
        }
    }

    /// Whether `error` is a connection the provider closed or reset before answering.
    private static func isClosedUnanswered(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError { return error == .remoteConnectionClosed }
        if let error = error as? IOError { return error.errnoCode == ECONNRESET || error.errnoCode == EPIPE }
        return false
    }

    /// The body of the answer to `request`: past ``maxAnswerBytes``, or with a status other than
    /// 200 (or 400/401 with `acceptingErrors`, the token endpoint's errors), it fails.
    private func answer(_ request: HTTPClientRequest, acceptingErrors: Bool = false) async throws(Failure) -> Data {
        let response: HTTPClientResponse
        do {
            response = try await self.send(request)
        } catch {
            self.logger.warning("OpenID Connect provider unreachable", metadata: ["url": "\(request.url)", "error": "\(String(reflecting: error))"])
            throw Failure("the sign-in provider did not answer")
        }
        guard response.status == .ok || (acceptingErrors && (response.status == .badRequest || response.status == .unauthorized)) else {
            throw Failure("the sign-in provider answered \(response.status.code) at \(request.url)")
        }
        do {
            return Data(buffer: try await response.body.collect(upTo: Self.maxAnswerBytes))
        } catch {
            throw Failure("the sign-in provider's answer at \(request.url) is over \(Self.maxAnswerBytes) bytes or was cut off")
        }
    }
}

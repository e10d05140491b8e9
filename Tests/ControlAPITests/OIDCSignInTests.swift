import AsyncHTTPClient
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import ControlAPI

/// Sign-in through a real OpenID Connect provider (oidc-provider-mock, Authlib's), as a
/// browser goes through it: control-api's start, the provider's form, the provider's redirect
/// to control-api's callback, the callback's redirect to the client, and the client's trade of
/// its one-time code and PKCE verifier for a token pair.
@Suite("Control-api sign-in through an OpenID Connect provider (live NATS, Postgres and provider)")
struct OIDCSignInTests {
    typealias H = ControlHarness
    typealias JSON = [String: Any]

    /// The person's browser: posts the provider's sign-in form (as `subject`, or denying) and
    /// answers the query of where the provider sends it (control-api's callback).
    static func authorize(_ url: String, as subject: String?) async throws -> String {
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(redirectConfiguration: .disallow))
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: subject.map { "sub=\($0)" } ?? "action=deny"))
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, timeout: .seconds(10))
            try await http.shutdown()
        } catch {
            try? await http.shutdown()
            throw error
        }
        #expect(response.status == .found, "the provider's form answered \(response.status)")
        let location = try #require(response.headers.first(name: "Location"), "the provider sent the browser nowhere")
        let components = try #require(URLComponents(string: location))
        #expect(components.path == "/v1/auth/oidc/callback", "the provider sent the browser to \(location)")
        return components.percentEncodedQuery ?? ""
    }

    /// The `state` control-api put in a started login's authorization URL.
    static func state(of started: JSON) throws -> String {
        let url = try #require(started["authorizationUrl"] as? String)
        let components = try #require(URLComponents(string: url))
        return try #require(components.queryItems?.first { $0.name == "state" }?.value)
    }

    static func start(
        _ control: any TestClientProtocol,
        verifier: String,
        returnURI: String = H.oidcConsole,
        state: String? = "client-state"
    ) async throws -> (HTTPResponse.Status, JSON) {
        var body: JSON = ["returnUri": returnURI, "codeChallenge": PKCE.challenge(of: verifier), "deviceName": "Ana's phone", "platform": "ios"]
        if let state { body["state"] = state }
        return try await H.call(control, .post, "/v1/auth/oidc/start", json: body)
    }

    /// control-api's callback with the provider's query: its status, and the query items of
    /// where it sends the browser (nil when it does not send it on).
    static func callback(_ control: any TestClientProtocol, query: String) async throws -> (HTTPResponse.Status, [String: String]?, String) {
        try await control.execute(uri: "/v1/auth/oidc/callback?" + query, method: .get) { response in
            guard let location = response.headers[.location] else { return (response.status, nil, String(buffer: response.body)) }
            let components = URLComponents(string: location)
            var items: [String: String] = [:]
            for item in components?.queryItems ?? [] { items[item.name] = item.value ?? "" }
            items["_base"] = location.split(separator: "?", maxSplits: 1).first.map(String.init)
            return (response.status, items, location)
        }
    }

    /// The whole sign-in as `subject` from the console: the one-time code and its verifier.
    static func signIn(
        _ control: any TestClientProtocol,
        as subject: String,
        returnURI: String = H.oidcConsole
    ) async throws -> (code: String, verifier: String) {
        let verifier = PKCE.verifier()
        let (status, started) = try await Self.start(control, verifier: verifier, returnURI: returnURI)
        #expect(status == .ok, "start: \(status) \(started)")
        let url = try #require(started["authorizationUrl"] as? String)
        let (found, back, location) = try await Self.callback(control, query: try await Self.authorize(url, as: subject))
        #expect(found == .found, "callback: \(found) \(location)")
        #expect(back?["_base"] == returnURI && back?["state"] == "client-state", "sent on to \(location)")
        return (try #require(back?["code"], "no code in \(location)"), verifier)
    }

    @Test("a person signs in with PKCE: the provider's groups become scopes, the token pair works and refreshes, the device names the person")
    func signIn() async throws {
        let (provider, harness) = try await H.withOIDCProvider()
        defer { withExtendedLifetime(provider) {} }
        try await harness.run { _, control in
            let (info, about) = try await H.call(control, .get, "/v1/auth/oidc")
            #expect(info == .ok && about["issuer"] as? String == provider.issuer && about["name"] as? String == "Single sign-on")

            let verifier = PKCE.verifier()
            let (status, started) = try await Self.start(control, verifier: verifier)
            #expect(status == .ok)
            let url = try #require(started["authorizationUrl"] as? String)
            let request = try #require(URLComponents(string: url))
            var asked: [String: String] = [:]
            for item in request.queryItems ?? [] { asked[item.name] = item.value }
            #expect(url.hasPrefix(provider.issuer + "/oauth2/authorize?"))
            #expect(asked["response_type"] == "code" && asked["client_id"] == "swarmdeck-test" && asked["scope"] == "openid email profile")
            #expect(asked["redirect_uri"] == "http://127.0.0.1:9/v1/auth/oidc/callback" && asked["code_challenge_method"] == "S256")
            // control-api's own verifier and state, never the client's.
            #expect(asked["code_challenge"].map(PKCE.isChallenge) == true && asked["code_challenge"] != PKCE.challenge(of: verifier))
            #expect(asked["state"]?.utf8.count == 64 && asked["state"] != "client-state" && asked["nonce"]?.isEmpty == false)

            let (found, back, location) = try await Self.callback(control, query: try await Self.authorize(url, as: "alice"))
            #expect(found == .found && back?["_base"] == H.oidcConsole && back?["state"] == "client-state", "\(location)")
            let code = try #require(back?["code"])
            #expect(code.hasPrefix("sdo_") && back?["error"] == nil)

            let (created, pair) = try await H.call(control, .post, "/v1/auth/oidc/token", json: ["code": code, "codeVerifier": verifier])
            #expect(created == .created, "\(pair)")
            #expect(pair["tenantId"] as? String == harness.tenant)
            #expect(Set(pair["scopes"] as? [String] ?? []) == ["stream:read", "agents:control"])
            let access = try #require(pair["accessToken"] as? String)
            #expect(try await H.call(control, .get, "/v1/overview", token: access).0 == .ok)
            #expect(try await H.call(control, .get, "/v1/admin/devices", token: access).0 == .forbidden)
            // A code works once.
            let (again, reused) = try await H.call(control, .post, "/v1/auth/oidc/token", json: ["code": code, "codeVerifier": verifier])
            #expect(again == .unauthorized && reused.errorCode == "AuthInvalid")

            // The sign-in refreshes as any device's does.
            let (refreshed, next) = try await H.call(control, .post, "/v1/auth/token/refresh", json: ["refreshToken": pair["refreshToken"] as Any])
            #expect(refreshed == .ok && next["deviceId"] as? String == pair["deviceId"] as? String)

            // The admin sees who signed in; revoking the device ends the sign-in.
            let admin = try await harness.token(scopes: [.admin])
            let (_, list) = try await H.call(control, .get, "/v1/admin/devices", token: admin)
            let device = (list["devices"] as? [JSON])?.first { $0["deviceId"] as? String == pair["deviceId"] as? String }
            #expect(device?["person"] as? String == "alice@example.com" && device?["name"] as? String == "Ana's phone")
            #expect(try await H.call(control, .post, "/v1/admin/devices/\(pair["deviceId"] as? String ?? "")/revoke", token: admin).0 == .ok)
            let (gone, _) = try await H.call(control, .post, "/v1/auth/token/refresh", json: ["refreshToken": next["refreshToken"] as Any])
            #expect(gone == .unauthorized)

            // A person without an email is named by the subject; groups add up.
            let (carolCode, carolVerifier) = try await Self.signIn(control, as: "carol", returnURI: H.oidcPhone)
            let (_, carol) = try await H.call(control, .post, "/v1/auth/oidc/token", json: ["code": carolCode, "codeVerifier": carolVerifier])
            #expect(Set(carol["scopes"] as? [String] ?? []) == ["admin", "stream:read", "agents:control"])
        }
    }

    @Test("refused: a wrong verifier (the code is used up), a person with no scope, a replayed state, another login's code, a provider's error")
    func refusals() async throws {
        let (provider, harness) = try await H.withOIDCProvider()
        defer { withExtendedLifetime(provider) {} }
        try await harness.run { _, control in
            // Another client's verifier cannot redeem the code, and the code is then gone.
            let (code, verifier) = try await Self.signIn(control, as: "alice")
            let (wrong, refused) = try await H.call(control, .post, "/v1/auth/oidc/token", json: ["code": code, "codeVerifier": PKCE.verifier()])
            #expect(wrong == .unauthorized && refused.errorCode == "AuthInvalid")
            #expect(try await H.call(control, .post, "/v1/auth/oidc/token", json: ["code": code, "codeVerifier": verifier]).0 == .unauthorized)
            #expect(
                try await H.call(control, .post, "/v1/auth/oidc/token", json: ["code": "sdo_nothing", "codeVerifier": verifier]).0 == .unauthorized
            )
            let (short, _) = try await H.call(control, .post, "/v1/auth/oidc/token", json: ["code": "sdo_x", "codeVerifier": "short"])
            #expect(short == .badRequest)

            // A person the scope map gives nothing is sent back with no_scopes, and no code.
            let (_, started) = try await Self.start(control, verifier: PKCE.verifier())
            let query = try await Self.authorize(try #require(started["authorizationUrl"] as? String), as: "bob")
            let (found, back, _) = try await Self.callback(control, query: query)
            #expect(found == .found && back?["error"] == "no_scopes" && back?["code"] == nil && back?["state"] == "client-state")
            // What the URL says is fixed words: not who signed in, not the provider's answers.
            #expect(back?["error_description"]?.contains("bob") == false, "\(back ?? [:])")
            // The same state again: the login is finished.
            let (replayed, envelope, _) = try await Self.callback(control, query: query)
            #expect(replayed == .badRequest && envelope == nil)

            // Login B's state with login A's provider code: the ID token carries A's nonce.
            let (_, a) = try await Self.start(control, verifier: PKCE.verifier())
            let (_, b) = try await Self.start(control, verifier: PKCE.verifier())
            let queryA = try await Self.authorize(try #require(a["authorizationUrl"] as? String), as: "alice")
            let stateB = try Self.state(of: b)
            let codeA = try #require(URLComponents(string: "x:?" + queryA)?.queryItems?.first { $0.name == "code" }?.value)
            let (mixed, mixedBack, location) = try await Self.callback(control, query: FormEncoding.encode([("code", codeA), ("state", stateB)]))
            #expect(mixed == .found && mixedBack?["error"] == "provider_error" && mixedBack?["code"] == nil, "\(location)")
            #expect(mixedBack?["error_description"]?.contains("nonce") == true, "\(location)")

            // A provider's refusal, with the login's state, reaches the client as it was.
            let (_, denied) = try await Self.start(control, verifier: PKCE.verifier())
            let deniedState = try Self.state(of: denied)
            let (deniedStatus, deniedBack, _) = try await Self.callback(
                control,
                query: FormEncoding.encode([("error", "access_denied"), ("state", deniedState)])
            )
            #expect(deniedStatus == .found && deniedBack?["error"] == "access_denied" && deniedBack?["code"] == nil)
            // The provider's own deny button: oidc-provider-mock leaves the state out (RFC 6749
            // §4.1.2.1 asks for it), so the login cannot be found: 400, nowhere to send it.
            let (_, denyStart) = try await Self.start(control, verifier: PKCE.verifier())
            let denyQuery = try await Self.authorize(try #require(denyStart["authorizationUrl"] as? String), as: nil)
            #expect(try await Self.callback(control, query: denyQuery).0 == .badRequest)

            // What start refuses.
            #expect(try await Self.start(control, verifier: PKCE.verifier(), returnURI: "https://evil.test/signin/oidc").0 == .badRequest)
            #expect(try await Self.start(control, verifier: PKCE.verifier(), returnURI: H.oidcConsole + "?x=1").0 == .badRequest)
            let (plain, _) = try await H.call(
                control,
                .post,
                "/v1/auth/oidc/start",
                json: ["returnUri": H.oidcConsole, "codeChallenge": String(repeating: "a", count: 42) + "=", "deviceName": "x"]
            )
            #expect(plain == .badRequest)
            #expect(try await Self.callback(control, query: "code=x").0 == .badRequest)
            #expect(try await Self.callback(control, query: "state=" + String(repeating: "a", count: 300)).0 == .badRequest)
        }
    }

    @Test(
        "abuse: logins under way are bounded (429 past control.oidc.max-pending-logins), every sign-in operation is limited per source (429); without an issuer each is 404"
    )
    func bounds() async throws {
        let (provider, harness) = try await H.withOIDCProvider(["CONTROL_OIDC_MAX_PENDING_LOGINS": "3"])
        defer { withExtendedLifetime(provider) {} }
        try await harness.run { _, control in
            for _ in 0..<3 { #expect(try await Self.start(control, verifier: PKCE.verifier()).0 == .ok) }
            let (full, envelope) = try await Self.start(control, verifier: PKCE.verifier())
            #expect(full == .tooManyRequests && envelope.errorCode == "RateLimited")
        }
        // One source holds at most OIDCLogins.maxPendingPerSource of them, whatever the global bound.
        let (perSourceProvider, perSource) = try await H.withOIDCProvider()
        defer { withExtendedLifetime(perSourceProvider) {} }
        try await perSource.run { _, control in
            for _ in 0..<20 { #expect(try await Self.start(control, verifier: PKCE.verifier()).0 == .ok) }
            let (full, envelope) = try await Self.start(control, verifier: PKCE.verifier())
            #expect(full == .tooManyRequests && envelope.errorCode == "RateLimited")
        }
        // Every sign-in operation counts against control.auth-per-minute per source address.
        let (limitedProvider, limited) = try await H.withOIDCProvider(["CONTROL_AUTH_PER_MINUTE": "2"])
        defer { withExtendedLifetime(limitedProvider) {} }
        try await limited.run { _, control in
            #expect(try await Self.start(control, verifier: PKCE.verifier()).0 == .ok)
            #expect(try await Self.callback(control, query: "state=unknown&code=x").0 == .badRequest)
            let (third, envelope) = try await H.call(control, .post, "/v1/auth/oidc/token", json: ["code": "sdo_x", "codeVerifier": PKCE.verifier()])
            #expect(third == .tooManyRequests && envelope.errorCode == "RateLimited")
        }
        let plain = try await ControlHarness()
        try await plain.run { _, control in
            let (info, envelope) = try await H.call(control, .get, "/v1/auth/oidc")
            #expect(info == .notFound && envelope.errorCode == "NotFound")
            #expect(try await Self.start(control, verifier: PKCE.verifier()).0 == .notFound)
            #expect(try await Self.callback(control, query: "state=x&code=y").0 == .notFound)
            #expect(try await H.call(control, .post, "/v1/auth/oidc/token", json: ["code": "sdo_x", "codeVerifier": PKCE.verifier()]).0 == .notFound)
        }
    }
}

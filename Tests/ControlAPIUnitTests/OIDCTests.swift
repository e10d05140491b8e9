import Contracts
import Foundation
import JWTKit
import ServiceKit
import Testing

@testable import ControlAPI

@Suite("Sign-in through an OpenID Connect provider: the pure parts")
struct OIDCTests {
    @Test("PKCE S256 gives RFC 7636 appendix B's challenge, and checks what a verifier may be")
    func pkce() {
        #expect(PKCE.challenge(of: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(PKCE.verifies("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"))
        #expect(!PKCE.verifies("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXl", challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"))
        let verifier = PKCE.verifier()
        #expect(verifier.utf8.count == 43 && PKCE.isVerifier(verifier) && verifier != PKCE.verifier())
        #expect(PKCE.isChallenge(PKCE.challenge(of: verifier)))
        #expect(!PKCE.isVerifier(String(repeating: "a", count: 42)) && PKCE.isVerifier(String(repeating: "a", count: 128)))
        #expect(!PKCE.isVerifier(String(repeating: "a", count: 129)) && !PKCE.isVerifier(String(repeating: "a", count: 42) + "+"))
        #expect(!PKCE.isChallenge(String(repeating: "a", count: 42) + ".") && !PKCE.isChallenge(String(repeating: "a", count: 44)))
        // A plain challenge (the verifier itself) is no S256 challenge of it.
        #expect(!PKCE.verifies(verifier, challenge: verifier))
    }

    @Test("form encoding escapes all but the unreserved bytes, and adds to a query that is there")
    func formEncoding() {
        #expect(FormEncoding.escape("a b&c=d+e/é~._-") == "a%20b%26c%3Dd%2Be%2F%C3%A9~._-")
        #expect(FormEncoding.encode([("x", "1"), ("y z", "&")]) == "x=1&y%20z=%26")
        #expect(FormEncoding.url("https://p.example/auth", adding: [("a", "1")]) == "https://p.example/auth?a=1")
        #expect(FormEncoding.url("https://p.example/auth?tenant=t", adding: [("a", "1")]) == "https://p.example/auth?tenant=t&a=1")
        #expect(FormEncoding.url("swarmdeck://signin", adding: []) == "swarmdeck://signin")
    }

    @Test("the scope map: groups to scopes, defaults for everyone, malformed configuration named")
    func scopeMap() throws {
        let map = try OIDCScopeMap.parse(claim: "groups", defaults: "", map: "ops=stream:read agents:control; admins=admin,stream:read").get()
        #expect(map.scopes(for: ["groups": .strings(["ops"])]) == [.streamRead, .agentsControl])
        #expect(map.scopes(for: ["groups": .strings(["ops", "admins", "unknown"])]) == [.streamRead, .agentsControl, .admin])
        #expect(map.scopes(for: ["groups": .string("admins")]) == [.admin, .streamRead])
        #expect(map.scopes(for: ["groups": .other]).isEmpty)
        #expect(map.scopes(for: [:]).isEmpty)
        let everyone = try OIDCScopeMap.parse(claim: "roles", defaults: "stream:read", map: "").get()
        #expect(everyone.scopes(for: ["groups": .strings(["ops"])]) == [.streamRead])
        // A group whose name holds "=": the last one divides it from its scopes.
        let odd = try OIDCScopeMap.parse(claim: "groups", defaults: "", map: "cn=ops,dc=example=stream:read").get()
        #expect(odd.scopes(for: ["groups": .string("cn=ops,dc=example")]) == [.streamRead])
        for (defaults, text) in [("", "ops=stream:read nonsense"), ("", "ops="), ("", "=admin"), ("", "ops"), ("root", "")] {
            if case .success = OIDCScopeMap.parse(claim: "groups", defaults: defaults, map: text) {
                Issue.record("'\(defaults)' / '\(text)' should be refused")
            }
        }
        if case .success = OIDCScopeMap.parse(claim: "", defaults: "", map: "") { Issue.record("an empty claim name should be refused") }
    }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func claims(_ change: (inout IDTokenClaims) -> Void = { _ in }) -> IDTokenClaims {
        var claims = IDTokenClaims(
            issuer: "https://id.example",
            subject: "alice",
            audience: ["swarmdeck"],
            expires: Self.now.addingTimeInterval(300),
            issuedAt: Self.now,
            nonce: "n-1"
        )
        change(&claims)
        return claims
    }

    @Test("an ID token's issuer, audience, azp, expiry, issue time and nonce are each checked")
    func idTokenChecks() throws {
        func refusal(_ claims: IDTokenClaims) -> String? {
            do {
                try claims.check(issuer: "https://id.example", clientID: "swarmdeck", nonce: "n-1", now: Self.now)
                return nil
            } catch {
                return error.reason
            }
        }
        #expect(refusal(Self.claims()) == nil)
        #expect(refusal(Self.claims { $0.issuer = "https://id.example/" })?.contains("issuer") == true)
        #expect(refusal(Self.claims { $0.issuer = nil })?.contains("issuer") == true)
        #expect(refusal(Self.claims { $0.subject = "" })?.contains("subject") == true)
        #expect(refusal(Self.claims { $0.audience = ["other"] })?.contains("not for this client") == true)
        #expect(refusal(Self.claims { $0.audience = ["swarmdeck", "other"] })?.contains("azp") == true)
        #expect(
            refusal(
                Self.claims {
                    $0.audience = ["swarmdeck", "other"]
                    $0.authorizedParty = "swarmdeck"
                }
            ) == nil
        )
        #expect(refusal(Self.claims { $0.authorizedParty = "other" })?.contains("azp") == true)
        #expect(refusal(Self.claims { $0.expires = Self.now.addingTimeInterval(-61) })?.contains("expired") == true)
        #expect(refusal(Self.claims { $0.expires = Self.now.addingTimeInterval(-30) }) == nil, "within the clocks' leeway")
        #expect(refusal(Self.claims { $0.expires = nil })?.contains("expiry") == true)
        #expect(refusal(Self.claims { $0.issuedAt = Self.now.addingTimeInterval(120) })?.contains("future") == true)
        #expect(refusal(Self.claims { $0.nonce = "n-2" })?.contains("nonce") == true)
        #expect(refusal(Self.claims { $0.nonce = nil })?.contains("nonce") == true)
    }

    @Test("an ID token's claims decode from a single or an array audience, with groups and email")
    func idTokenDecoding() throws {
        let one = try JSONDecoder().decode(
            IDTokenClaims.self,
            from: Data(
                #"{"iss":"https://id.example","sub":"alice","aud":"swarmdeck","exp":1800000300,"iat":1800000000,"nonce":"n-1","email":"alice@example.com","email_verified":true,"groups":["ops","admins"],"n":3}"#
                    .utf8
            )
        )
        #expect(one.audience == ["swarmdeck"] && one.subject == "alice" && one.expires == Self.now.addingTimeInterval(300))
        #expect(one.claims["groups"] == .strings(["ops", "admins"]) && one.claims["n"] == .other)
        #expect(one.person == "alice@example.com")
        let many = try JSONDecoder().decode(
            IDTokenClaims.self,
            from: Data(#"{"sub":"bob","aud":["a","b"],"email":"b@x","email_verified":false}"#.utf8)
        )
        #expect(many.audience == ["a", "b"])
        #expect(many.person == "bob", "an unverified email is not who signed in")
        let unsaid = try JSONDecoder().decode(IDTokenClaims.self, from: Data(#"{"sub":"eve","aud":"a","email":"ceo@example.com"}"#.utf8))
        #expect(unsaid.person == "eve", "an email the provider does not say it verified is not who signed in")
        let crowded = "{" + (0..<201).map { "\"c\($0)\":1" }.joined(separator: ",") + "}"
        #expect(throws: (any Error).self) { try JSONDecoder().decode(IDTokenClaims.self, from: Data(crowded.utf8)) }
    }

    @Test("providers are https, or http on this machine; return URIs are absolute, without fragments")
    func addresses() {
        #expect(OIDCSettings.isProviderURL("https://id.example/realms/ops"))
        #expect(OIDCSettings.isProviderURL("http://127.0.0.1:9400") && OIDCSettings.isProviderURL("http://localhost:9400"))
        #expect(!OIDCSettings.isProviderURL("http://id.example") && !OIDCSettings.isProviderURL("ftp://id.example"))
        #expect(!OIDCSettings.isProviderURL("https://id.example/?x=1") && !OIDCSettings.isProviderURL("id.example"))
        #expect(OIDCSettings.isReturnURI("https://console.example/signin/oidc") && OIDCSettings.isReturnURI("swarmdeck://signin"))
        #expect(!OIDCSettings.isReturnURI("/signin/oidc") && !OIDCSettings.isReturnURI("https://c.example/#x"))
        #expect(!OIDCSettings.isReturnURI("javascript:alert(1)"))
    }

    /// A file for auth.jwt.private-key-file, which the settings read (its content is not parsed there).
    static let signingKeyFile: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("oidc-tests-\(getpid()).pem").path
        _ = FileManager.default.createFile(atPath: path, contents: Data("-----BEGIN PRIVATE KEY-----\n".utf8))
        return path
    }()

    @Test("with control.oidc.issuer empty sign-in is off and no other control.oidc key is read; set, every one is checked")
    func offUnlessAnIssuer() async throws {
        let others = [
            "AUTH_JWT_PRIVATE_KEY_FILE": Self.signingKeyFile, "CONTROL_OIDC_CLIENT_SECRET_FILE": "/nonexistent/secret",
            "CONTROL_OIDC_TENANT": "..", "CONTROL_OIDC_REQUEST_SCOPES": "email", "CONTROL_OIDC_MAX_PENDING_LOGINS": "0",
        ]
        for issuer in [nil, "", " "] {
            var environment = others
            environment["CONTROL_OIDC_ISSUER"] = issuer
            let settings = try ControlSettings(reader: try await ServiceConfiguration.reader(arguments: ["control-api"], environment: environment))
            #expect(settings.oidc == nil)
        }
        var on = others
        on["CONTROL_OIDC_ISSUER"] = "http://127.0.0.1:9400"
        let error = try await #require(throws: ServiceKitError.self) {
            try ControlSettings(reader: try await ServiceConfiguration.reader(arguments: ["control-api"], environment: on))
        }
        for key in ["client-secret-file", "tenant", "request-scopes", "max-pending-logins"] {
            #expect(error.message.contains("'control.oidc.\(key)'"), "\(key) in \(error.message)")
        }
        on = ["AUTH_JWT_PRIVATE_KEY_FILE": Self.signingKeyFile, "CONTROL_OIDC_ISSUER": "http://127.0.0.1:9400", "CONTROL_OIDC_TENANT": "ops"]
        let settings = try ControlSettings(reader: try await ServiceConfiguration.reader(arguments: ["control-api"], environment: on))
        #expect(settings.oidc?.tenant == "ops" && settings.oidc?.redirectURI == "http://127.0.0.1:8080/v1/auth/oidc/callback")
    }
}

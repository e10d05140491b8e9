import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@Suite("Control-api auth (live NATS and Postgres)")
struct ControlAuthTests {
    typealias H = ControlHarness

    /// Codes from the admin endpoint, as `swarmdeck tenant create` gets them.
    static func codes(_ control: any TestClientProtocol, _ harness: ControlHarness, count: Int = 1, scopes: [String]? = nil) async throws -> [String]
    {
        var body: [String: Any] = ["count": count]
        if let scopes { body["scopes"] = scopes }
        let (status, object) = try await H.call(
            control,
            .post,
            "/v1/admin/enrolment-codes",
            token: try await harness.token(scopes: [.admin]),
            json: body
        )
        #expect(status == .created)
        return try #require(object["codes"] as? [String])
    }

    @Test("enrol a device, use its token, rotate its refresh token; reuse of a rotated one revokes the family")
    func enrolAndRotate() async throws {
        let harness = try await ControlHarness()
        try await harness.run { _, control in
            // Enrolment codes need the admin scope.
            #expect(try await H.call(control, .post, "/v1/admin/enrolment-codes", json: ["count": 1]).0 == .unauthorized)
            let reader = try await harness.token(scopes: [.streamRead])
            let (forbidden, envelope) = try await H.call(control, .post, "/v1/admin/enrolment-codes", token: reader, json: ["count": 1])
            #expect(forbidden == .forbidden && envelope.errorCode == "PermissionDenied")

            let codes = try await Self.codes(control, harness, count: 2, scopes: ["stream:read", "agents:control"])
            #expect(codes.count == 2 && Set(codes).count == 2)
            let (created, pair) = try await H.call(
                control,
                .post,
                "/v1/auth/device/register",
                json: ["code": codes[0], "deviceName": "phone", "platform": "ios"]
            )
            #expect(created == .created)
            #expect(pair["tenantId"] as? String == harness.tenant)
            #expect(Set(pair["scopes"] as? [String] ?? []) == ["stream:read", "agents:control"])
            let access = try #require(pair["accessToken"] as? String)
            let refresh = try #require(pair["refreshToken"] as? String)
            #expect(try await H.call(control, .get, "/v1/overview", token: access).0 == .ok)
            // Scopes the code did not grant are refused.
            #expect(try await H.call(control, .get, "/v1/audit", token: access).0 == .ok)
            #expect(try await H.call(control, .post, "/v1/admin/enrolment-codes", token: access, json: [:] as [String: Any]).0 == .forbidden)

            // A code works once.
            let (reused, reusedBody) = try await H.call(control, .post, "/v1/auth/device/register", json: ["code": codes[0], "deviceName": "thief"])
            #expect(reused == .unauthorized && reusedBody.errorCode == "AuthInvalid")
            #expect(try await H.call(control, .post, "/v1/auth/device/register", json: ["code": "sde_0000", "deviceName": "x"]).0 == .unauthorized)

            // Rotation: the new refresh token works, the old one is refused, and its reuse
            // revokes the family, so the newest one stops working too.
            let (rotated, second) = try await H.call(control, .post, "/v1/auth/token/refresh", json: ["refreshToken": refresh])
            #expect(rotated == .ok)
            let refresh2 = try #require(second["refreshToken"] as? String)
            #expect(refresh2 != refresh)
            #expect(try await H.call(control, .get, "/v1/overview", token: try #require(second["accessToken"] as? String)).0 == .ok)
            let (third, thirdBody) = try await H.call(control, .post, "/v1/auth/token/refresh", json: ["refreshToken": refresh2])
            #expect(third == .ok)
            let refresh3 = try #require(thirdBody["refreshToken"] as? String)

            let (replay, replayBody) = try await H.call(control, .post, "/v1/auth/token/refresh", json: ["refreshToken": refresh])
            #expect(replay == .unauthorized && replayBody.errorCode == "AuthInvalid")
            let (revoked, revokedBody) = try await H.call(control, .post, "/v1/auth/token/refresh", json: ["refreshToken": refresh3])
            #expect(revoked == .unauthorized)
            #expect((revokedBody["error"] as? [String: Any])?["message"] as? String == "the refresh token was revoked; enrol the device again")

            // Another device's family is untouched.
            let (other, otherPair) = try await H.call(control, .post, "/v1/auth/device/register", json: ["code": codes[1], "deviceName": "tablet"])
            #expect(other == .created)
            #expect(
                try await H.call(control, .post, "/v1/auth/token/refresh", json: ["refreshToken": try #require(otherPair["refreshToken"] as? String)])
                    .0 == .ok
            )
            #expect(try await H.call(control, .post, "/v1/auth/token/refresh", json: ["refreshToken": "sdr_garbage"]).0 == .unauthorized)
        }
    }

    @Test("two refreshes racing with one token: one wins, the other counts as reuse and revokes the family")
    func racingRefresh() async throws {
        let harness = try await ControlHarness()
        try await harness.run { _, control in
            let code = try await Self.codes(control, harness)[0]
            let (_, pair) = try await H.call(control, .post, "/v1/auth/device/register", json: ["code": code, "deviceName": "phone"])
            let refresh = try #require(pair["refreshToken"] as? String)
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<2 {
                    group.addTask { try await H.call(control, .post, "/v1/auth/token/refresh", json: ["refreshToken": refresh]).0 }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.sorted { $0.code < $1.code } == [.ok, .unauthorized])
        }
    }

    @Test("access tokens: expired, forged, wrong audience, wrong issuer, garbage and missing are refused")
    func badAccessTokens() async throws {
        let harness = try await ControlHarness()
        try await harness.run { _, control in
            let expired = try await harness.signer.sign(
                tenant: harness.tenant,
                subject: "op",
                scopes: Set(Scope.allCases),
                lifetime: .seconds(60),
                now: Date().addingTimeInterval(-3600)
            )
            let (status, envelope) = try await H.call(control, .get, "/v1/overview", token: expired)
            #expect(status == .unauthorized && envelope.errorCode == "AuthExpired")

            let pair = AccessTokenSigner.generateKeyPair()
            let forger = try await AccessTokenSigner(privateKeyPEM: pair.privateKey, keyID: "swarmdeck-1", issuer: "swarmdeck", audience: "swarmdeck")
            let wrongAudience = try await AccessTokenSigner(
                privateKeyPEM: try String(contentsOf: harness.keyFile, encoding: .utf8),
                keyID: "swarmdeck-1",
                issuer: "swarmdeck",
                audience: "elsewhere"
            )
            let wrongIssuer = try await AccessTokenSigner(
                privateKeyPEM: try String(contentsOf: harness.keyFile, encoding: .utf8),
                keyID: "swarmdeck-1",
                issuer: "mallory",
                audience: "swarmdeck"
            )
            for signer in [forger, wrongAudience, wrongIssuer] {
                let token = try await signer.sign(tenant: harness.tenant, subject: "op", scopes: Set(Scope.allCases))
                let (refused, body) = try await H.call(control, .get, "/v1/overview", token: token)
                #expect(refused == .unauthorized && body.errorCode == "AuthInvalid")
            }
            for header in ["Bearer nope", "Basic abc", "Bearer a.b.c"] {
                #expect(try await H.call(control, .get, "/v1/swarms", headers: [.authorization: header]).0 == .unauthorized)
            }
            #expect(try await H.call(control, .get, "/v1/swarms").0 == .unauthorized)
        }
    }

    @Test("the JWKS publishes the key the access tokens are signed with")
    func jwks() async throws {
        let harness = try await ControlHarness()
        try await harness.run { _, control in
            let (status, object) = try await H.call(control, .get, "/.well-known/jwks.json")
            #expect(status == .ok)
            let keys = try #require(object["keys"] as? [[String: Any]])
            #expect(keys.count == 1)
            let key = try #require(keys.first)
            #expect(key["kid"] as? String == "swarmdeck-1" && key["alg"] as? String == "ES256" && key["crv"] as? String == "P-256")
            // A verifier built from the JWKS alone accepts a token control-api issued.
            let collection = JWTKeyCollection()
            try await collection.add(jwksJSON: String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self))
            let code = try await Self.codes(control, harness)[0]
            let (_, pair) = try await H.call(control, .post, "/v1/auth/device/register", json: ["code": code, "deviceName": "phone"])
            let claims = try await collection.verify(try #require(pair["accessToken"] as? String), as: AccessClaims.self)
            #expect(claims.tenant == harness.tenant)
            #expect(claims.subject.value == pair["deviceId"] as? String)
        }
    }
}

@Suite("Control-api sign-in limits (live NATS and Postgres)")
struct ControlSignInLimitTests {
    typealias H = ControlHarness

    @Test("registrations and refreshes are limited per source address; another source still gets through")
    func perSource() async throws {
        let harness = try await ControlHarness(["CONTROL_AUTH_PER_MINUTE": "5"])
        try await harness.run(.live) { _, control in
            func register(from source: String) async throws -> (HTTPResponse.Status, H.JSON) {
                try await H.call(
                    control,
                    .post,
                    "/v1/auth/device/register",
                    json: ["code": "sde_not-a-code", "deviceName": "phone"],
                    headers: [.xForwardedFor: "198.51.100.7, \(source)"]
                )
            }
            // Five at once, then one every 12 s: the calls admitted are counted against the time
            // they took.
            let bucket = BucketProbe(perMinute: 5)
            for _ in 0..<3 { #expect(try await register(from: "203.0.113.5").0 != .tooManyRequests) }
            // Refreshes count against the same address.
            for _ in 0..<2 {
                let (status, _) = try await H.call(
                    control,
                    .post,
                    "/v1/auth/token/refresh",
                    json: ["refreshToken": "sdr_nothing"],
                    headers: [.xForwardedFor: "203.0.113.5"]
                )
                #expect(status != .tooManyRequests)
            }
            let clock = ContinuousClock()
            var body: H.JSON = [:]
            var asked = clock.now
            let (admitted, refused) = try await bucket.untilRefused(from: 5) { _ in
                asked = clock.now
                let (status, answer) = try await register(from: "203.0.113.5")
                body = answer
                return status != .tooManyRequests
            }
            #expect(refused && bucket.fits(admitted), "\(admitted) calls admitted in \(bucket.seconds) s at 5 a minute")
            #expect(body.errorCode == "RateLimited")
            // The hops before the proxy's are the client's word: changing them changes nothing.
            // Refused until the next token: Retry-After (rounded up) from the refusal.
            let retryAfter = try #require((body["error"] as? [String: Any])?["retryAfterSeconds"] as? Int)
            let again = try await H.call(
                control,
                .post,
                "/v1/auth/device/register",
                json: ["code": "sde_not-a-code", "deviceName": "phone"],
                headers: [.xForwardedFor: "192.0.2.44, 203.0.113.5"]
            ).0
            #expect(again == .tooManyRequests || clock.now - asked > .seconds(retryAfter - 1), "another client hop got through before its time")
            #expect(try await register(from: "203.0.113.9").0 != .tooManyRequests)
        }
    }

    @Test("three replicas hold the limit together: a source's sign-ins spread over them get the configured number, not three times it")
    func acrossReplicas() async throws {
        let harness = try await ControlHarness(["CONTROL_AUTH_PER_MINUTE": "5"])
        try await harness.run(.live) { _, first in
            try await harness.control().test(.live) { second in
                try await harness.control().test(.live) { third in
                    let replicas = [first, second, third]
                    func register(_ replica: Int, from source: String) async throws -> HTTPResponse.Status {
                        try await H.call(
                            replicas[replica % 3],
                            .post,
                            "/v1/auth/device/register",
                            json: ["code": "sde_not-a-code", "deviceName": "phone"],
                            headers: [.xForwardedFor: source]
                        ).0
                    }
                    var statuses: [HTTPResponse.Status] = []
                    let started = ContinuousClock.now
                    for attempt in 0..<15 { statuses.append(try await register(attempt, from: "203.0.113.5")) }
                    // The bucket refills one sign-in every 12 s: a loaded machine's slow run may
                    // see one come back.
                    let refills = Int((ContinuousClock.now - started) / .seconds(12))
                    // Each replica alone would let five through: fifteen in all. The five are
                    // answered as a bad code is (never a server error).
                    let admitted = statuses.filter { $0 != .tooManyRequests }
                    let answer = try #require(admitted.first, "\(statuses)")
                    #expect(admitted.count >= 5 && admitted.count <= 5 + refills, "\(statuses)")
                    #expect(Set(admitted).count == 1 && answer.code < 500, "\(statuses)")
                    #expect(statuses.prefix(5).allSatisfy { $0 != .tooManyRequests }, "\(statuses)")
                    // Another source has its own bucket, on every replica.
                    for replica in 0..<3 { #expect(try await register(replica, from: "203.0.113.9") == answer) }
                }
            }
        }
    }
}

import APNs
import Crypto
import Foundation
import Testing

@testable import APNsLocal

/// The pure rules of the APNs client and of the local server's checks.
@Suite("APNs rules")
struct APNsRulesTests {
    static let pem = P256.Signing.PrivateKey().pemRepresentation

    @Test("one provider token is reused for 50 minutes, then replaced; never minted per request")
    func tokenReuse() throws {
        let signer = try APNsProviderToken(pem: Self.pem, keyID: "ABC123DEFG", teamID: "TEAM123456")
        let first = signer.token(now: 1_000_000)
        #expect(signer.token(now: 1_000_000 + 49 * 60) == first)
        #expect(signer.minted == 1)
        let second = signer.token(now: 1_000_000 + 50 * 60)
        #expect(second != first)
        #expect(signer.minted == 2)
    }

    @Test("a rejected token is renewed once, and only when at least 20 minutes old")
    func tokenRenewal() throws {
        let signer = try APNsProviderToken(pem: Self.pem, keyID: "ABC123DEFG", teamID: "TEAM123456")
        let first = signer.token(now: 1_000_000)
        #expect(!signer.renew(rejected: first, now: 1_000_000 + 60))  // too young: clock skew, not age
        #expect(signer.token(now: 1_000_000 + 60) == first)
        #expect(signer.renew(rejected: first, now: 1_000_000 + 20 * 60))
        let second = signer.token(now: 1_000_000 + 20 * 60)
        #expect(second != first)
        // A second rejection of the old token (another request in flight) mints nothing more.
        #expect(signer.renew(rejected: first, now: 1_000_000 + 20 * 60 + 1))
        #expect(signer.minted == 2)
    }

    @Test("the token is the JWT Apple asks for, and the local server's check accepts it")
    func tokenFormat() throws {
        let key = P256.Signing.PrivateKey()
        let signer = try APNsProviderToken(pem: key.pemRepresentation, keyID: "ABC123DEFG", teamID: "TEAM123456")
        let token = signer.token(now: 2_000_000)
        let keys = ["ABC123DEFG": APNsLocalKey(keyID: "ABC123DEFG", teamID: "TEAM123456", publicKey: key.publicKey)]
        let verified = try APNsLocalCheck.verify(authorization: "bearer " + token, keys: keys, now: 2_000_010).get()
        #expect(verified.keyID == "ABC123DEFG" && verified.issuedAt == 2_000_000)
        #expect(throws: APNsLocalCheck.Refusal(status: 403, reason: "ExpiredProviderToken")) {
            try APNsLocalCheck.verify(authorization: "bearer " + token, keys: keys, now: 2_000_000 + 3601).get()
        }
        let otherTeam = ["ABC123DEFG": APNsLocalKey(keyID: "ABC123DEFG", teamID: "OTHER12345", publicKey: key.publicKey)]
        #expect(throws: APNsLocalCheck.Refusal(status: 403, reason: "InvalidProviderToken")) {
            try APNsLocalCheck.verify(authorization: "bearer " + token, keys: otherTeam, now: 2_000_010).get()
        }
        let otherKey = ["ABC123DEFG": APNsLocalKey(keyID: "ABC123DEFG", teamID: "TEAM123456", publicKey: P256.Signing.PrivateKey().publicKey)]
        #expect(throws: APNsLocalCheck.Refusal(status: 403, reason: "InvalidProviderToken")) {
            try APNsLocalCheck.verify(authorization: "bearer " + token, keys: otherKey, now: 2_000_010).get()
        }
        #expect(throws: APNsError.self) { try APNsProviderToken(pem: "not a key", keyID: "ABC123DEFG", teamID: "TEAM123456") }
        #expect(throws: APNsError.self) { try APNsProviderToken(pem: key.pemRepresentation, keyID: "short", teamID: "TEAM123456") }
    }

    static func notification(_ change: (inout APNsNotification) -> Void = { _ in }) -> APNsNotification {
        var notification = APNsNotification(
            deviceToken: String(repeating: "ab", count: 32),
            environment: .sandbox,
            topic: "dev.swarmdeck.app",
            pushType: .alert,
            priority: .immediate,
            expiration: 0,
            collapseID: "incident-1",
            apnsID: UUID(),
            payload: Data(#"{"aps":{"alert":"hi"}}"#.utf8)
        )
        change(&notification)
        return notification
    }

    @Test("a notification that APNs would refuse for its form is refused before sending")
    func notificationValidation() throws {
        try Self.notification().validate()
        try Self.notification { $0.payload = Data(repeating: 0x20, count: 4096) }.validate()
        let bad: [(String, (inout APNsNotification) -> Void)] = [
            ("oversized", { $0.payload = Data(repeating: 0x20, count: 4097) }),
            ("empty", { $0.payload = Data() }),
            ("collapse id", { $0.collapseID = String(repeating: "c", count: 65) }),
            ("background at 10", { $0.pushType = .background }),
            ("upper-case token", { $0.deviceToken = String(repeating: "AB", count: 32) }),
            ("short token", { $0.deviceToken = "abcd" }),
            ("no topic", { $0.topic = "" }),
            ("negative expiration", { $0.expiration = -1 }),
        ]
        for (name, change) in bad {
            #expect(throws: APNsError.self, "\(name)") { try Self.notification(change).validate() }
        }
    }

    @Test("each status and reason maps to what Apple says to do")
    func outcomes() {
        func outcome(_ status: Int, _ reason: String?, _ timestamp: Int64? = nil) -> APNsOutcome {
            APNsResponse(status: status, reason: reason, timestamp: timestamp, apnsID: nil).outcome
        }
        #expect(outcome(200, nil) == .delivered)
        #expect(outcome(410, "Unregistered", 1234) == .unregistered(since: 1234))
        #expect(outcome(410, "ExpiredToken") == .unregistered(since: nil))
        #expect(outcome(400, "BadDeviceToken") == .wrongEnvironment)
        #expect(outcome(400, "BadCollapseId") == .rejected)
        #expect(outcome(400, "DeviceTokenNotForTopic") == .rejected)
        #expect(outcome(413, "PayloadTooLarge") == .rejected)
        #expect(outcome(403, "ExpiredProviderToken") == .providerTokenRejected)
        #expect(outcome(403, "InvalidProviderToken") == .providerTokenRejected)
        #expect(outcome(403, "Forbidden") == .rejected)
        #expect(outcome(429, "TooManyRequests") == .deviceThrottled)
        #expect(outcome(429, "TooManyProviderTokenUpdates") == .retryLater)
        #expect(outcome(500, "InternalServerError") == .retryLater)
        #expect(outcome(503, "ServiceUnavailable") == .retryLater)
    }

    @Test("backoff doubles from its base to its cap, jittered within the upper half")
    func backoff() {
        let backoff = APNsBackoff(baseMilliseconds: 100, capMilliseconds: 1000)
        #expect(backoff.ceiling(afterAttempt: 1) == 100)
        #expect(backoff.ceiling(afterAttempt: 2) == 200)
        #expect(backoff.ceiling(afterAttempt: 4) == 800)
        #expect(backoff.ceiling(afterAttempt: 5) == 1000)
        #expect(backoff.ceiling(afterAttempt: 500) == 1000)
        var generator = SystemRandomNumberGenerator()
        for attempt in 1...10 {
            let delay = backoff.delay(afterAttempt: attempt, using: &generator)
            #expect(delay >= backoff.ceiling(afterAttempt: attempt) / 2 && delay <= backoff.ceiling(afterAttempt: attempt))
        }
    }

    @Test("the local server checks headers and payload in APNs' order, with APNs' reasons")
    func localChecks() throws {
        let key = P256.Signing.PrivateKey()
        let signer = try APNsProviderToken(pem: key.pemRepresentation, keyID: "ABC123DEFG", teamID: "TEAM123456")
        let keys = ["ABC123DEFG": APNsLocalKey(keyID: "ABC123DEFG", teamID: "TEAM123456", publicKey: key.publicKey)]
        let now = Int64(Date().timeIntervalSince1970)
        let token = String(repeating: "0f", count: 32)
        func request(_ change: (inout APNsLocalRequest) -> Void = { _ in }) -> APNsLocalRequest {
            var request = APNsLocalRequest(
                method: "POST",
                path: "/3/device/" + token,
                headers: [
                    ("authorization", "bearer " + signer.token(now: now)), ("apns-topic", "dev.swarmdeck.app"), ("apns-push-type", "alert"),
                    ("apns-priority", "10"), ("apns-id", UUID().uuidString.lowercased()),
                ],
                body: Array(#"{"aps":{}}"#.utf8)
            )
            change(&request)
            return request
        }
        func reason(_ change: (inout APNsLocalRequest) -> Void) -> String? {
            if case .failure(let refusal) = APNsLocalCheck.check(request(change), keys: keys, topics: ["dev.swarmdeck.app"], now: now) {
                return refusal.reason
            }
            return nil
        }
        #expect(reason { _ in } == nil)
        #expect(reason { $0.path = "/3/other" } == "BadPath")
        #expect(reason { $0.method = "GET" } == "MethodNotAllowed")
        #expect(reason { $0.headers.removeAll { $0.name == "authorization" } } == "MissingProviderToken")
        #expect(reason { $0.headers.append(("apns-topic", "dev.swarmdeck.app")) } == "DuplicateHeaders")
        #expect(reason { $0.headers.removeAll { $0.name == "apns-topic" } } == "MissingTopic")
        #expect(reason { $0.headers = $0.headers.map { $0.name == "apns-topic" ? ($0.name, "com.other") : $0 } } == "TopicDisallowed")
        #expect(reason { $0.headers = $0.headers.map { $0.name == "apns-push-type" ? ($0.name, "background") : $0 } } == "BadPriority")
        #expect(reason { $0.headers = $0.headers.map { $0.name == "apns-push-type" ? ($0.name, "loud") : $0 } } == "InvalidPushType")
        #expect(reason { $0.headers.append(("apns-collapse-id", String(repeating: "c", count: 65))) } == "BadCollapseId")
        #expect(reason { $0.headers.append(("apns-expiration", "soon")) } == "BadExpirationDate")
        #expect(reason { $0.headers = $0.headers.map { $0.name == "apns-id" ? ($0.name, "not-a-uuid") : $0 } } == "BadMessageId")
        #expect(reason { $0.path = "/3/device/xyz" } == "BadDeviceToken")
        #expect(reason { $0.body = [] } == "PayloadEmpty")
        #expect(reason { $0.body = Array(repeating: 0x20, count: 4097) } == "PayloadTooLarge")
    }
}

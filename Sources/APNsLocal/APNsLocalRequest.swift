public import Crypto
import Foundation
import ServiceKit

/// One request as the local APNs server received it.
struct APNsLocalRequest: Sendable {
    var method: String
    var path: String
    /// Every header as sent (names lower-case, as HTTP/2 carries them), repeats kept.
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func values(_ name: String) -> [String] { self.headers.filter { $0.name == name }.map(\.value) }
    func value(_ name: String) -> String? { self.values(name).first }
}

/// A provider key the local server accepts tokens of.
public struct APNsLocalKey: Sendable {
    public var keyID: String
    public var teamID: String
    public var publicKey: P256.Signing.PublicKey

    public init(keyID: String, teamID: String, publicKey: P256.Signing.PublicKey) {
        self.keyID = keyID
        self.teamID = teamID
        self.publicKey = publicKey
    }
}

/// What the provider token of a request said, once checked.
struct APNsLocalToken: Sendable, Hashable {
    var keyID: String
    var issuedAt: Int64
    /// The first 16 hex digits of the token's SHA-256: which token, without keeping it.
    var digest: String
}

/// APNs' checks of a push request, in the order APNs applies them, answering the status and
/// reason APNs would (pure: the server supplies the keys, topics and time).
enum APNsLocalCheck {
    struct Refusal: Error, Hashable {
        var status: Int
        var reason: String
    }

    static let pushTypes: Set<String> = [
        "alert", "background", "voip", "complication", "fileprovider", "mdm", "location", "liveactivity", "pushtotalk",
    ]

    /// The device token of a valid request and its checked provider token, or the refusal.
    static func check(
        _ request: APNsLocalRequest,
        keys: [String: APNsLocalKey],
        topics: Set<String>,
        now: Int64
    ) -> Result<(deviceToken: String, token: APNsLocalToken), Refusal> {
        guard request.path.hasPrefix("/3/device/") else { return .failure(Refusal(status: 404, reason: "BadPath")) }
        guard request.method == "POST" else { return .failure(Refusal(status: 405, reason: "MethodNotAllowed")) }
        let deviceToken = String(request.path.dropFirst("/3/device/".count))
        guard !deviceToken.isEmpty else { return .failure(Refusal(status: 400, reason: "MissingDeviceToken")) }
        for name in ["authorization", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-id", "apns-collapse-id"]
        where request.values(name).count > 1 {
            return .failure(Refusal(status: 400, reason: "DuplicateHeaders"))
        }
        guard let authorization = request.value("authorization") else { return .failure(Refusal(status: 403, reason: "MissingProviderToken")) }
        let token: APNsLocalToken
        switch Self.verify(authorization: authorization, keys: keys, now: now) {
        case .success(let verified): token = verified
        case .failure(let refusal): return .failure(refusal)
        }
        guard let topic = request.value("apns-topic") else { return .failure(Refusal(status: 400, reason: "MissingTopic")) }
        guard topics.isEmpty || topics.contains(topic) else { return .failure(Refusal(status: 400, reason: "TopicDisallowed")) }
        let pushType = request.value("apns-push-type") ?? "alert"
        guard Self.pushTypes.contains(pushType) else { return .failure(Refusal(status: 400, reason: "InvalidPushType")) }
        let priority = request.value("apns-priority") ?? "10"
        guard ["10", "5", "1"].contains(priority), !(pushType == "background" && priority == "10") else {
            return .failure(Refusal(status: 400, reason: "BadPriority"))
        }
        if let expiration = request.value("apns-expiration"), Int64(expiration) == nil {
            return .failure(Refusal(status: 400, reason: "BadExpirationDate"))
        }
        if let id = request.value("apns-id"), UUID(uuidString: id) == nil || id != id.lowercased() {
            return .failure(Refusal(status: 400, reason: "BadMessageId"))
        }
        if let collapseID = request.value("apns-collapse-id"), collapseID.utf8.count > 64 {
            return .failure(Refusal(status: 400, reason: "BadCollapseId"))
        }
        guard (64...200).contains(deviceToken.utf8.count), deviceToken.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { return .failure(Refusal(status: 400, reason: "BadDeviceToken")) }
        guard !request.body.isEmpty else { return .failure(Refusal(status: 400, reason: "PayloadEmpty")) }
        guard request.body.count <= 4096 else { return .failure(Refusal(status: 413, reason: "PayloadTooLarge")) }
        return .success((deviceToken, token))
    }

    /// Checks `bearer <jwt>`: ES256 by a known key, `iss` its team, `iat` within the hour.
    static func verify(authorization: String, keys: [String: APNsLocalKey], now: Int64) -> Result<APNsLocalToken, Refusal> {
        let invalid = Refusal(status: 403, reason: "InvalidProviderToken")
        guard authorization.hasPrefix("bearer ") else { return .failure(invalid) }
        let jwt = authorization.dropFirst("bearer ".count)
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerData = Data(base64URLEncoded: parts[0]),
            let claimsData = Data(base64URLEncoded: parts[1]),
            let signatureData = Data(base64URLEncoded: parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any],
            header["alg"] as? String == "ES256",
            let keyID = header["kid"] as? String,
            let issuer = claims["iss"] as? String,
            let issuedAt = (claims["iat"] as? NSNumber)?.int64Value
        else { return .failure(invalid) }
        guard let key = keys[keyID], key.teamID == issuer,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            key.publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else { return .failure(invalid) }
        guard now - issuedAt <= 3600, issuedAt <= now + 60 else { return .failure(Refusal(status: 403, reason: "ExpiredProviderToken")) }
        let digest = SHA256.hash(data: Data(jwt.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        return .success(APNsLocalToken(keyID: keyID, issuedAt: issuedAt, digest: digest))
    }
}

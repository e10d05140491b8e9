public import Crypto
public import Foundation
import ServiceKit
import Synchronization

/// The provider authentication token (an ES256 JWT: header `alg`, `kid`; claims `iss` = team,
/// `iat`) that every request carries as `authorization: bearer …`.
///
/// One token is minted and reused until it is ``reuseSeconds`` old (Apple rejects a token over
/// an hour old and throttles a team that mints more often than every 20 minutes), never per
/// request. A token that APNs calls expired is renewed once, and only if it is at least
/// ``minimumRenewalSeconds`` old, so a clock-skewed machine cannot be made to mint in a loop.
public final class APNsProviderToken: Sendable {
    /// Reuse a token this long (50 minutes).
    public static let reuseSeconds: Int64 = 50 * 60
    /// Never mint a new token sooner than this after the last one (20 minutes).
    public static let minimumRenewalSeconds: Int64 = 20 * 60

    /// The team's key id (the `kid` of every token).
    public let keyID: String
    /// The developer team id (the `iss` of every token).
    public let teamID: String
    private let key: P256.Signing.PrivateKey
    private let current = Mutex<(token: String, issuedAt: Int64)?>(nil)
    private let mintedCount = Atomic<Int>(0)

    /// - Parameter pem: the team's `.p8` file (a PKCS#8 P-256 private key in PEM).
    public init(pem: String, keyID: String, teamID: String) throws(APNsError) {
        guard Self.isIdentifier(keyID) else { throw APNsError(.invalidKey, "the APNs key id must be 10 letters or digits") }
        guard Self.isIdentifier(teamID) else { throw APNsError(.invalidKey, "the APNs team id must be 10 letters or digits") }
        do {
            self.key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw APNsError(.invalidKey, "the APNs key is not a P-256 private key in PEM (a .p8 file): \(error)")
        }
        self.keyID = keyID
        self.teamID = teamID
    }

    /// The public half, which the local APNs server checks tokens against.
    public var publicKey: P256.Signing.PublicKey { self.key.publicKey }

    /// How many tokens this signer has minted (a test and a metric read it).
    public var minted: Int { self.mintedCount.load(ordering: .relaxed) }

    /// The token to send at `now` (epoch seconds): the current one, or a new one when the
    /// current is ``reuseSeconds`` old.
    public func token(now: Int64 = Int64(Date().timeIntervalSince1970)) -> String {
        self.current.withLock { current in
            if let current, now - current.issuedAt < Self.reuseSeconds, now >= current.issuedAt { return current.token }
            let token = self.mint(issuedAt: now)
            current = (token, now)
            return token
        }
    }

    /// APNs answered `rejected` with 403 `ExpiredProviderToken`: mints a new token if
    /// `rejected` is still the current one and old enough to renew. Answers whether a retry
    /// would carry a different token.
    public func renew(rejected: String, now: Int64 = Int64(Date().timeIntervalSince1970)) -> Bool {
        self.current.withLock { current in
            guard let existing = current else { return true }
            guard existing.token == rejected else { return true }
            guard now - existing.issuedAt >= Self.minimumRenewalSeconds || now < existing.issuedAt else { return false }
            current = (self.mint(issuedAt: now), now)
            return true
        }
    }

    private func mint(issuedAt: Int64) -> String {
        self.mintedCount.add(1, ordering: .relaxed)
        let header = Data(#"{"alg":"ES256","kid":"\#(self.keyID)"}"#.utf8).base64URLEncodedString()
        let claims = Data(#"{"iss":"\#(self.teamID)","iat":\#(issuedAt)}"#.utf8).base64URLEncodedString()
        let input = header + "." + claims
        // P-256 signing cannot fail for a valid key and a message in memory.
        let signature = (try? self.key.signature(for: Data(input.utf8)).rawRepresentation) ?? Data()
        return input + "." + signature.base64URLEncodedString()
    }

    /// Key and team ids are ten characters of `A-Z0-9` as Apple issues them (lower case
    /// accepted).
    static func isIdentifier(_ text: String) -> Bool {
        text.utf8.count == 10 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }
}

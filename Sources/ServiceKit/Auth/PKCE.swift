import Crypto
import Foundation

/// Proof Key for Code Exchange (RFC 7636), method `S256` only: a secret verifier stays with
/// whoever started an authorization; its challenge goes with the request; only the holder of
/// the verifier can redeem the code.
public enum PKCE {
    /// A new verifier: 32 random bytes in base64url, 43 characters (RFC 7636 §4.1).
    public static func verifier() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64URLEncodedString()
    }

    /// `BASE64URL(SHA256(ASCII(verifier)))` without padding (RFC 7636 §4.2).
    public static func challenge(of verifier: String) -> String {
        Data(SHA256.hash(data: Array(verifier.utf8))).base64URLEncodedString()
    }

    /// Whether `text` can be a verifier: 43 to 128 of `A-Z a-z 0-9 - . _ ~` (RFC 7636 §4.1).
    public static func isVerifier(_ text: String) -> Bool {
        (43...128).contains(text.utf8.count) && text.utf8.allSatisfy(\.isURIUnreserved)
    }

    /// Whether `text` can be an S256 challenge: 43 base64url characters (a SHA-256 digest).
    public static func isChallenge(_ text: String) -> Bool {
        text.utf8.count == 43 && text.utf8.allSatisfy { $0 != UInt8(ascii: ".") && $0 != UInt8(ascii: "~") && $0.isURIUnreserved }
    }

    /// Whether `verifier` is the one `challenge` was made from (in constant time).
    public static func verifies(_ verifier: String, challenge: String) -> Bool {
        Self.isVerifier(verifier) && constantTimeEqual(Array(Self.challenge(of: verifier).utf8), Array(challenge.utf8))
    }
}

extension UInt8 {
    /// Whether this byte is one of URI's unreserved characters, `A-Z a-z 0-9 - . _ ~` (RFC 3986
    /// §2.3): what PKCE verifiers are made of and what percent-encoding leaves as it is.
    public var isURIUnreserved: Bool {
        switch self {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }
}

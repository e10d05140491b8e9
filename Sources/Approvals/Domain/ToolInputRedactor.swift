import Foundation

/// What of a tool's input a gate keeps to show the person deciding: credentials masked in place
/// by ``CredentialMask``, and the whole cut to a size a phone can show.
///
/// A string is masked where it holds a credential's format; a value under a key that names a
/// secret (password, secret, token, API key, authorization, credential, private key, cookie,
/// session) has every run of its characters masked, but never its whitespace or shell syntax.
/// How many values were masked is counted, for the client to show next to Approve.
///
/// Bounds: strings over ``maxString`` characters are cut, objects and arrays past ``maxItems``
/// entries or ``maxDepth`` levels are cut, and if the result is still over `maxBytes` it is
/// replaced by `{"truncated": "<first bytes>"}`. Anything cut sets `truncated`.
struct ToolInputRedactor {
    var maxBytes: Int
    static let maxString = 4000
    static let maxItems = 100
    static let maxDepth = 8

    /// A tool's input as a gate keeps it.
    struct Redacted: Sendable, Equatable {
        /// The input as JSON text, keys sorted.
        var json: String
        /// Whether anything was cut.
        var truncated: Bool
        /// How many values were masked.
        var masked: Int
    }

    /// The redacted input.
    func redact(_ object: [String: Any]) -> Redacted {
        var truncated = false
        var masked = 0
        let clean = Self.redact(object, depth: 0, secret: nil, truncated: &truncated, masked: &masked)
        guard let data = try? JSONSerialization.data(withJSONObject: clean, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return Redacted(json: "{}", truncated: true, masked: masked)
        }
        if data.count <= self.maxBytes {
            return Redacted(json: String(decoding: data, as: UTF8.self), truncated: truncated, masked: masked)
        }
        // Still too large: a prefix of it, as a string (cut on a character boundary).
        let prefix = String(decoding: data.prefix(max(0, self.maxBytes - 64)), as: UTF8.self).filter { $0 != "\u{FFFD}" }
        let fallback = (try? JSONSerialization.data(withJSONObject: ["truncated": prefix], options: [.sortedKeys])) ?? Data("{}".utf8)
        return Redacted(json: String(decoding: fallback, as: UTF8.self), truncated: true, masked: masked)
    }

    /// `secret`: the key of the nearest secret's name above the value, if any.
    private static func redact(_ value: Any, depth: Int, secret: String?, truncated: inout Bool, masked: inout Int) -> Any {
        if depth >= Self.maxDepth, value is [String: Any] || value is [Any] {
            truncated = true
            return "[cut: nested too deep]"
        }
        switch value {
        case let object as [String: Any]:
            var result: [String: Any] = [:]
            for key in object.keys.sorted().prefix(Self.maxItems) {
                let cleanKey = key.unicodeScalars.count > 200 ? String(String.UnicodeScalarView(key.unicodeScalars.prefix(200))) : key
                result[cleanKey] = Self.redact(
                    object[key]!,
                    depth: depth + 1,
                    secret: CredentialMask.isSecretName(key) ? key : secret,
                    truncated: &truncated,
                    masked: &masked
                )
            }
            if object.count > Self.maxItems { truncated = true }
            return result
        case let array as [Any]:
            if array.count > Self.maxItems { truncated = true }
            return array.prefix(Self.maxItems).map {
                Self.redact($0, depth: depth + 1, secret: secret, truncated: &truncated, masked: &masked)
            }
        case let string as String:
            let mask = secret.map { CredentialMask.maskingSecret(string, key: $0) } ?? CredentialMask(string)
            masked += mask.count
            var clean = mask.text
            if clean.unicodeScalars.count > Self.maxString {
                clean = String(String.UnicodeScalarView(clean.unicodeScalars.prefix(Self.maxString))) + "…"
                truncated = true
            }
            return clean
        case is NSNull:
            return value
        default:
            // A number or a boolean under a secret's key is a secret too.
            guard secret != nil else { return value }
            masked += 1
            return CredentialMask.placeholder
        }
    }
}

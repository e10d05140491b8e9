import Foundation

/// What of a tool's input a gate keeps to show the person deciding: secrets replaced by
/// `[redacted]`, and the whole cut to a size a phone can show.
///
/// A value is a secret when its key names one (password, secret, token, API key,
/// authorization, credential, private key, cookie, session) or when the string itself looks like
/// one: a known key prefix (`sk-`, `sk-ant-`, `ghp_`, `gho_`, `github_pat_`, `xoxb-`, `xoxp-`,
/// `AKIA`, `sdi_`, `glpat-`), a `Bearer` credential, a JWT, or a PEM private key block. Inside
/// a longer string (a shell command) such a word is replaced alone, so `curl -H "Authorization:
/// Bearer abc…" …` keeps its shape.
///
/// Bounds: strings over ``maxString`` characters are cut, objects and arrays past ``maxItems``
/// entries or ``maxDepth`` levels are cut, and if the result is still over `maxBytes` it is
/// replaced by `{"truncated": "<first bytes>"}`. Anything cut sets `truncated`.
struct ToolInputRedactor {
    var maxBytes: Int
    static let maxString = 4000
    static let maxItems = 100
    static let maxDepth = 8
    static let redacted = "[redacted]"

    /// The redacted input as JSON text (keys sorted), and whether anything was cut.
    func redact(_ object: [String: Any]) -> (json: String, truncated: Bool) {
        var truncated = false
        let clean = Self.redact(object, depth: 0, truncated: &truncated)
        guard let data = try? JSONSerialization.data(withJSONObject: clean, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return ("{}", true)
        }
        if data.count <= self.maxBytes {
            return (String(decoding: data, as: UTF8.self), truncated)
        }
        // Still too large: a prefix of it, as a string (cut on a character boundary).
        let prefix = String(decoding: data.prefix(max(0, self.maxBytes - 64)), as: UTF8.self).filter { $0 != "\u{FFFD}" }
        let fallback = (try? JSONSerialization.data(withJSONObject: ["truncated": prefix], options: [.sortedKeys])) ?? Data("{}".utf8)
        return (String(decoding: fallback, as: UTF8.self), true)
    }

    private static func redact(_ value: Any, depth: Int, truncated: inout Bool) -> Any {
        if depth >= Self.maxDepth, value is [String: Any] || value is [Any] {
            truncated = true
            return "[cut: nested too deep]"
        }
        switch value {
        case let object as [String: Any]:
            var result: [String: Any] = [:]
            for key in object.keys.sorted().prefix(Self.maxItems) {
                let cleanKey = key.unicodeScalars.count > 200 ? String(String.UnicodeScalarView(key.unicodeScalars.prefix(200))) : key
                result[cleanKey] = Self.isSecretKey(key) ? Self.redacted : Self.redact(object[key]!, depth: depth + 1, truncated: &truncated)
            }
            if object.count > Self.maxItems { truncated = true }
            return result
        case let array as [Any]:
            if array.count > Self.maxItems { truncated = true }
            return array.prefix(Self.maxItems).map { Self.redact($0, depth: depth + 1, truncated: &truncated) }
        case let string as String:
            var clean = Self.redactWords(in: string)
            if clean.unicodeScalars.count > Self.maxString {
                clean = String(String.UnicodeScalarView(clean.unicodeScalars.prefix(Self.maxString))) + "…"
                truncated = true
            }
            return clean
        default:
            return value
        }
    }

    private static let secretKeyWords = [
        "password", "passwd", "secret", "token", "apikey", "api_key", "api-key", "authorization", "credential", "privatekey",
        "private_key", "private-key", "cookie", "session",
    ]

    static func isSecretKey(_ key: String) -> Bool {
        let lower = key.lowercased()
        return Self.secretKeyWords.contains { lower.contains($0) }
    }

    private static let secretPrefixes = ["sk-", "ghp_", "gho_", "ghs_", "github_pat_", "xoxb-", "xoxp-", "AKIA", "sdi_", "glpat-"]

    /// Whether one whitespace-delimited word is a credential.
    static func isSecretWord(_ word: Substring) -> Bool {
        let trimmed = word.trimmingCharacters(in: CharacterSet(charactersIn: "\"'`,;()[]{}<>"))
        guard trimmed.count >= 12 else { return false }
        // `NAME=ghp_…` or `header:sk-…`: the value after the last `=` or `:` counts too.
        let value = trimmed.split(whereSeparator: { $0 == "=" || $0 == ":" }).last.map(String.init) ?? trimmed
        if Self.secretPrefixes.contains(where: { trimmed.hasPrefix($0) || value.hasPrefix($0) }) { return true }
        // A JWT: three base64url parts, the first a JSON header.
        let parts = trimmed.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 3, trimmed.hasPrefix("eyJ"), parts.allSatisfy({ !$0.isEmpty }) { return true }
        // A long run of key-like characters after a `key=` or `key:`.
        if let equals = trimmed.firstIndex(where: { $0 == "=" || $0 == ":" }) {
            let name = trimmed[..<equals]
            if Self.isSecretKey(String(name)) && trimmed.index(after: equals) < trimmed.endIndex { return true }
        }
        return false
    }

    /// The string with credential words replaced, a `Bearer`/`Basic` credential and a PEM
    /// private key block included.
    static func redactWords(in string: String) -> String {
        var text = string
        if let begin = text.range(of: "-----BEGIN"), text.range(of: "PRIVATE KEY-----", range: begin.upperBound..<text.endIndex) != nil {
            let end = text.range(of: "-----END", range: begin.upperBound..<text.endIndex)
            let close = end.flatMap { text.range(of: "-----", range: $0.upperBound..<text.endIndex) }
            text.replaceSubrange(begin.lowerBound..<(close?.upperBound ?? text.endIndex), with: Self.redacted)
        }
        var output = ""
        output.reserveCapacity(text.utf8.count)
        var redactNext = false
        var word = Substring()
        func emit() {
            if word.isEmpty { return }
            if redactNext || Self.isSecretWord(word) {
                output += Self.redacted
                redactNext = false
            } else {
                output += word
                let bare = word.trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
                redactNext = bare.caseInsensitiveCompare("Bearer") == .orderedSame || bare.caseInsensitiveCompare("Basic") == .orderedSame
            }
        }
        var start = text.startIndex
        for index in text.indices where text[index].isWhitespace {
            word = text[start..<index]
            emit()
            output.append(text[index])
            start = text.index(after: index)
        }
        word = text[start..<text.endIndex]
        emit()
        return output
    }
}

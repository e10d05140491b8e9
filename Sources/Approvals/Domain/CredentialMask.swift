/// Masks credentials in a text, in place: only the characters of a value that has a credential's
/// format are replaced by `[redacted]`, and never a character of shell syntax, so what a command
/// will do stays visible to the person deciding.
///
/// A credential is one of:
/// - a run of token characters (`A-Z a-z 0-9 - _ . ~ + / =`) of at least 12 starting with a
///   known key prefix (`sk-`, `ghp_`, `gho_`, `ghs_`, `github_pat_`, `xoxb-`, `xoxp-`, `AKIA`,
///   `sdi_`, `glpat-`);
/// - a JWT: `eyJ…` and two more base64url parts joined by dots;
/// - the token after `Bearer` or `Basic` (spaces or tabs between, no line break), 8 or more;
/// - the value after `NAME=` or `NAME:` where the name holds password, passwd, secret, token,
///   apikey, api_key, api-key, authorization, credential, private key, cookie or session: the
///   value's characters up to whitespace, a quote or shell syntax (`$ \` | ; & < > ( ) { } \`),
///   when it does not begin like a path (`/`, `.`, `~`);
/// - the body of a PEM private key block, only when the block is well formed: a
///   `-----BEGIN … PRIVATE KEY-----` line, then nothing but base64, whitespace and header lines,
///   then the matching `-----END … PRIVATE KEY-----`.
///
/// Anything else (a `-----BEGIN` with a command before its `-----END`, a `Bearer` followed by
/// shell syntax) is left as it is. ``count`` says how many values were masked, so a client can
/// show it next to Approve.
struct CredentialMask: Sendable, Equatable {
    /// The text with its credentials masked.
    var text: String
    /// How many values were masked.
    var count: Int

    static let placeholder = "[redacted]"

    static let secretNameWords = [
        "password", "passwd", "secret", "token", "apikey", "api_key", "api-key", "authorization", "credential", "privatekey",
        "private_key", "private-key", "cookie", "session",
    ]

    static let schemes: Set<String> = ["Bearer", "Basic", "bearer", "basic"]

    static let keyPrefixes = ["sk-", "ghp_", "gho_", "ghs_", "github_pat_", "xoxb-", "xoxp-", "AKIA", "sdi_", "glpat-"]

    /// Whether a name (a JSON key, an environment variable, a header) names a secret.
    static func isSecretName<S: StringProtocol>(_ name: S) -> Bool {
        let lower = name.lowercased()
        return Self.secretNameWords.contains { lower.contains($0) }
    }

    /// The text with every credential masked, in one pass over it.
    init(_ text: String) {
        let scanner = Scanner(Array(text.unicodeScalars))
        var spans: [Range<Int>] = []
        var pem = scanner.pemBodies()[...]
        var index = 0
        while index < scanner.count {
            if let body = pem.first, body.lowerBound <= index {
                pem = pem.dropFirst()
                if body.upperBound > index {
                    spans.append(max(body.lowerBound, index)..<body.upperBound)
                    index = body.upperBound
                }
                continue
            }
            if let found = scanner.credential(at: index) {
                spans.append(found)
                index = found.upperBound
            } else {
                index += 1
            }
        }
        var out = String.UnicodeScalarView()
        var cursor = 0
        for span in spans {
            out.append(contentsOf: scanner.scalars[cursor..<span.lowerBound])
            out.append(contentsOf: Self.placeholder.unicodeScalars)
            cursor = span.upperBound
        }
        out.append(contentsOf: scanner.scalars[cursor...])
        self.text = String(out)
        self.count = spans.count
    }

    /// Words that make a key name something that runs (`session_cmd`, `token_script`).
    static let runnableNameWords = ["cmd", "command", "script", "shell", "exec", "run", "code", "query", "sql"]

    /// A JSON value under a key holding a secret's word: one without whitespace (a password,
    /// a token) is masked whole; text has every word masked, its whitespace and syntax kept,
    /// unless the key also names something that runs (`session_cmd`): that is masked as any
    /// text is, so a command stays in view.
    static func maskingSecret(_ text: String, key: String) -> CredentialMask {
        if !text.unicodeScalars.contains(where: { $0.properties.isWhitespace }) {
            return text.isEmpty ? CredentialMask(text: text, count: 0) : CredentialMask(text: Self.placeholder, count: 1)
        }
        let lower = key.lowercased()
        return Self.runnableNameWords.contains(where: { lower.contains($0) }) ? CredentialMask(text) : Self.maskingEveryValue(text)
    }

    /// Every run of characters that is not whitespace or shell syntax masked.
    static func maskingEveryValue(_ text: String) -> CredentialMask {
        let scalars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView()
        var count = 0
        var index = 0
        while index < scalars.count {
            if Self.isSyntaxOrSpace(scalars[index]) {
                out.append(scalars[index])
                index += 1
                continue
            }
            while index < scalars.count, !Self.isSyntaxOrSpace(scalars[index]) { index += 1 }
            out.append(contentsOf: Self.placeholder.unicodeScalars)
            count += 1
        }
        return CredentialMask(text: String(out), count: count)
    }

    private init(text: String, count: Int) {
        self.text = text
        self.count = count
    }

    // MARK: Character classes

    /// Characters a token is made of (RFC 6750's b64token, base64 and hex).
    static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9", "-", "_", ".", "~", "+", "/", "=": true
        default: false
        }
    }

    /// Shell syntax, quotes and whitespace: never masked.
    static func isSyntaxOrSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "$", "`", "|", ";", "&", "<", ">", "(", ")", "{", "}", "'", "\"", "\\", "!", "#", "*", "?", "[", "]": true
        default: scalar.properties.isWhitespace
        }
    }

    static func isNameCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9", "_", "-", ".": true
        default: false
        }
    }

    static func isBase64(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9", "+", "/", "=": true
        default: false
        }
    }

    static func isBase64URL(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9", "-", "_", "=": true
        default: false
        }
    }

    /// Base64 lines, `Name: value` header lines and whitespace (a literal `\n` counts as
    /// whitespace: a key pasted into a shell string); nothing that runs.
    static func isPEMBody(_ body: ArraySlice<Unicode.Scalar>) -> Bool {
        var sawBase64 = false
        for scalar in body {
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9", "+", "/", "=":
                sawBase64 = true
            case ":", ",", "-":
                break
            case "\\":
                break
            default:
                guard scalar.properties.isWhitespace else { return false }
            }
        }
        // A backslash must be the start of a `\n`.
        let text = String(String.UnicodeScalarView(body))
        return sawBase64 && text.replacingOccurrences(of: "\\n", with: "").allSatisfy { $0 != "\\" }
    }
}

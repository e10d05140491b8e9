import Contracts

/// The checks an OpenAPI document states but the generated types do not enforce, answered
/// with 400 `InvalidRequest` naming the field. Every OpenAPI service uses these.
public enum InputCheck {
    /// A swarm or agent id: the rule ingest accepts them by (`Contracts.EntityID`).
    public static func id(_ id: String, _ field: String) throws(APIError) {
        if let problem = EntityID.problem(id, field: field) { throw APIError(.invalidRequest, problem) }
    }

    /// An idempotency key chosen by the client (a request id, a decision id): 1–128 of
    /// `[A-Za-z0-9._:-]`.
    public static func key(_ key: String, _ field: String) throws(APIError) {
        guard (1...128).contains(key.utf8.count),
            key.utf8.allSatisfy({
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2E || $0 == 0x5F || $0 == 0x3A
                    || $0 == 0x2D
            })
        else {
            throw APIError(.invalidRequest, "\(field) must be 1 to 128 of A-Z a-z 0-9 . _ : -", details: [field: "1 to 128 of A-Z a-z 0-9 . _ : -"])
        }
    }

    /// A bounded string field, counted in code points as JSON Schema's `maxLength` is (Postgres
    /// text cannot hold NUL, so no field may).
    public static func text(_ text: String, _ field: String, max: Int, required: Bool = true) throws(APIError) {
        if required && text.allSatisfy(\.isWhitespace) {
            throw APIError(.invalidRequest, "\(field) must not be empty")
        }
        guard text.unicodeScalars.count <= max else {
            throw APIError(.invalidRequest, "\(field) must be at most \(max) characters")
        }
        guard !text.unicodeScalars.contains("\u{0}") else {
            throw APIError(.invalidRequest, "\(field) must not contain NUL characters")
        }
    }

    /// An integer parameter's range.
    public static func range(_ value: Int?, _ field: String, _ range: ClosedRange<Int>) throws(APIError) {
        if let value, !range.contains(value) {
            throw APIError(.invalidRequest, "\(field) must be between \(range.lowerBound) and \(range.upperBound)")
        }
    }
}

/// Any JSON value, for attributes that pass through to the client frame unchanged in meaning.
enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }
}

extension JSONValue {
    /// An object's fields by name (the last of a repeated name), or nil for anything else.
    var fields: [String: JSONValue]? {
        guard case .object(let fields) = self else { return nil }
        return Dictionary(fields, uniquingKeysWith: { $1 })
    }
}

/// Says what was wrong with a client's JSON so that the client can act on it: which field,
/// what was expected. Anything that is not a `DecodingError` is "malformed JSON".
public func describeDecodingFailure(_ error: any Error) -> String {
    guard let error = error as? DecodingError else { return "malformed JSON" }
    func path(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.reduce(into: "") { path, key in
            if let index = key.intValue {
                path += "[\(index)]"
            } else {
                path += (path.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return path.isEmpty ? "the body" : path
    }
    func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Double.Type, is Float.Type, is Int64.Type, is Int32.Type, is Int.Type: "a number"
        case is Bool.Type: "a boolean"
        default: "of another type"
        }
    }
    switch error {
    case .typeMismatch(let type, let context): return "\(path(context)) must be \(typeName(type))"
    case .valueNotFound(let type, let context): return "\(path(context)) must be \(typeName(type)), not null"
    case .keyNotFound(let key, _): return "\(key.stringValue) is required"
    case .dataCorrupted(let context):
        return context.codingPath.isEmpty ? "malformed JSON" : "\(path(context)) is not valid: \(context.debugDescription)"
    @unknown default: return "malformed JSON"
    }
}

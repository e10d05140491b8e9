import Foundation

/// JSON-RPC 2.0 ids, as the ACP readers compare them: as JSON text, so an answer matches its
/// request only with an id of the same type and value (`5` is not `"5"`).
public enum JSONRPCID {
    /// `value` (a parsed id) as JSON text: a string (re-encoded: its escapes may differ from the
    /// message's, its characters do not) or an integer of at most 2^53 in magnitude (what a JSON
    /// number holds exactly); nil for anything else (null, a fraction, a boolean, larger).
    public static func text(_ value: Any?) -> String? {
        if let string = value as? String {
            return Self.jsonString(string)
        }
        guard let number = value as? NSNumber, String(cString: number.objCType) != "c" else { return nil }  // "c": a boolean
        let double = number.doubleValue
        guard double.rounded() == double, abs(double) <= 9_007_199_254_740_992, let integer = Int64(exactly: double) else { return nil }
        return String(integer)
    }

    /// `text` as a JSON string.
    public static func jsonString(_ text: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(text)) ?? Data(#""""#.utf8), as: UTF8.self)
    }
}

import Foundation
import OTLP

/// The attributes of an OTLP item, looked up first on the item and then on its resource.
///
/// Agents are inconsistent about types (Claude Code and Codex send many numbers as strings),
/// so the numeric accessors accept both.
struct OTLPAttributes {
    /// Longest string kept in an attribute copied into a frame; longer ones are cut.
    static let maxStringBytes = 4096
    /// Attributes copied into a frame; the rest are left out.
    static let maxCount = 64

    private var item: [String: OTLPAnyValue] = [:]
    private let resource: [String: OTLPAnyValue]
    /// The item's own attributes, in order, for the frame's `attrs`.
    private(set) var itemAttributes: [OTLPKeyValue] = []

    init(resource: [OTLPKeyValue]) {
        self.resource = Self.index(resource)
    }

    /// The same resource with `attributes` as the item's.
    func with(item attributes: [OTLPKeyValue]) -> OTLPAttributes {
        var copy = self
        copy.item = Self.index(attributes)
        copy.itemAttributes = attributes
        return copy
    }

    private static func index(_ attributes: [OTLPKeyValue]) -> [String: OTLPAnyValue] {
        var index: [String: OTLPAnyValue] = [:]
        index.reserveCapacity(attributes.count)
        for attribute in attributes { index[attribute.key] = attribute.value }
        return index
    }

    func value(_ key: String) -> OTLPAnyValue? {
        self.item[key] ?? self.resource[key]
    }

    /// The first non-empty string among `keys`.
    func string(_ keys: String...) -> String? {
        for key in keys {
            guard let value = self.value(key) else { continue }
            let text: String? =
                switch value.value {
                case .stringValue(let string)?: string
                case .intValue(let int)?: String(int)
                case .doubleValue(let double)?: String(double)
                case .boolValue(let bool)?: String(bool)
                default: nil
                }
            if let text, !text.isEmpty { return text }
        }
        return nil
    }

    func double(_ key: String) -> Double? {
        switch self.value(key)?.value {
        case .doubleValue(let double)?: double.isFinite ? double : nil
        case .intValue(let int)?: Double(int)
        case .stringValue(let string)?: Double(string).flatMap { $0.isFinite ? $0 : nil }
        default: nil
        }
    }

    func integer(_ key: String) -> Int64? {
        switch self.value(key)?.value {
        case .intValue(let int)?: int
        case .doubleValue(let double)?: double.isFinite && abs(double) < 9e18 ? Int64(double) : nil
        case .stringValue(let string)?: Int64(string) ?? Double(string).flatMap { $0.isFinite && abs($0) < 9e18 ? Int64($0) : nil }
        default: nil
        }
    }

    func bool(_ key: String) -> Bool? {
        switch self.value(key)?.value {
        case .boolValue(let bool)?: bool
        case .stringValue(let string)?: string == "true" ? true : string == "false" ? false : nil
        default: nil
        }
    }

    /// The item's attributes as a JSON object for the frame, within the limits above.
    var json: JSONValue? {
        guard !self.itemAttributes.isEmpty else { return nil }
        return .object(self.itemAttributes.prefix(Self.maxCount).map { ($0.key, Self.json($0.value, depth: 0)) })
    }

    /// An OTLP value as JSON: bytes as base64, strings cut at ``maxStringBytes``.
    static func json(_ value: OTLPAnyValue, depth: Int) -> JSONValue {
        switch value.value {
        case .stringValue(let string)?: .string(Self.cut(string))
        case .boolValue(let bool)?: .bool(bool)
        case .intValue(let int)?: .number(Double(int))
        case .doubleValue(let double)?: double.isFinite ? .number(double) : .string(String(double))
        case .bytesValue(let data)?: .string(data.base64EncodedString())
        case .arrayValue(let array)? where depth < 8: .array(array.values.prefix(Self.maxCount).map { Self.json($0, depth: depth + 1) })
        case .kvlistValue(let list)? where depth < 8:
            .object(list.values.prefix(Self.maxCount).map { ($0.key, Self.json($0.value, depth: depth + 1)) })
        default: .null
        }
    }

    /// `string` cut to at most ``maxStringBytes`` bytes, on a scalar boundary.
    static func cut(_ string: String, to limit: Int = maxStringBytes) -> String {
        guard string.utf8.count > limit else { return string }
        let bytes = Array(string.utf8)
        var end = limit
        while end > 0 && bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return String(decoding: bytes[..<end], as: UTF8.self) + "…"
    }
}

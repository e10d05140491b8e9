import Foundation

/// Any JSON value, as a script's tool input holds it.
public enum AnthropicLocalJSON: Sendable, Equatable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([AnthropicLocalJSON])
    case object([String: AnthropicLocalJSON])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([AnthropicLocalJSON].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: AnthropicLocalJSON].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let bool): try container.encode(bool)
        case .number(let number):
            if let integer = Int64(exactly: number) { try container.encode(integer) } else { try container.encode(number) }
        case .string(let string): try container.encode(string)
        case .array(let array): try container.encode(array)
        case .object(let object): try container.encode(object)
        }
    }

    /// Its JSON text, keys sorted.
    public var text: String {
        (try? AnthropicLocalWire.encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }
}

import Contracts
import Foundation

/// What identifies a tool call for loop and redundancy detection: the tool and its arguments.
/// The arguments are the first of the event's attributes `tool_parameters` (Claude Code's
/// `tool_result`), `tool_input`, `arguments`, `args` or `input`; a JSON text is parsed, and
/// objects are compared with their keys sorted. A call without arguments has no signature:
/// without them, exploring (the same tool on new inputs) would look like a loop.
struct ToolSignature: Sendable, Hashable {
    /// FNV-1a of the tool name and the canonical arguments.
    let hash: UInt64
    /// The file the call reads or writes (`file_path`, `path`, `filePath`, `notebook_path`).
    let path: String?
    /// Whether the tool changes what it touches (its name says write, edit, patch, replace,
    /// create, delete or move).
    let writes: Bool

    static let argumentKeys = ["tool_parameters", "tool_input", "arguments", "args", "input"]
    static let pathKeys = ["file_path", "path", "filePath", "notebook_path"]
    static let writingWords = ["write", "edit", "patch", "replace", "create", "delete", "move"]

    init?(tool: String, attributes: [String: AttributeValue]?) {
        guard let attributes, let raw = Self.argumentKeys.lazy.compactMap({ attributes[$0] }).first else { return nil }
        var arguments = raw
        if case .string(let text) = raw, let data = text.data(using: .utf8),
            let parsed = try? JSONDecoder().decode(AttributeValue.self, from: data)
        {
            arguments = parsed
        }
        var bytes: [UInt8] = Array(tool.utf8) + [0]
        Self.canonical(arguments, into: &bytes)
        self.hash = Self.fnv1a(bytes)
        if case .object(let fields) = arguments {
            self.path =
                Self.pathKeys.lazy.compactMap { key -> String? in
                    if case .string(let path)? = fields[key] { return path }
                    return nil
                }.first
        } else {
            self.path = nil
        }
        let name = tool.lowercased()
        self.writes = Self.writingWords.contains { name.contains($0) }
    }

    static func canonical(_ value: AttributeValue, into bytes: inout [UInt8]) {
        switch value {
        case .null: bytes += Array("null".utf8)
        case .bool(let flag): bytes += Array((flag ? "true" : "false").utf8)
        case .number(let number): bytes += Array("\(number)".utf8)
        case .string(let text):
            bytes.append(UInt8(ascii: "\""))
            bytes += Array(text.utf8)
            bytes.append(UInt8(ascii: "\""))
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for item in items {
                Self.canonical(item, into: &bytes)
                bytes.append(UInt8(ascii: ","))
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let fields):
            bytes.append(UInt8(ascii: "{"))
            for key in fields.keys.sorted() {
                bytes += Array(key.utf8)
                bytes.append(UInt8(ascii: ":"))
                Self.canonical(fields[key]!, into: &bytes)
                bytes.append(UInt8(ascii: ","))
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }
}

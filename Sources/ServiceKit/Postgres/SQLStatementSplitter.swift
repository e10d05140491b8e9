import Foundation

/// Splits a SQL script into statements at top-level semicolons.
///
/// postgres-nio speaks only the extended protocol, which takes one statement per query, so a
/// migration's script is run statement by statement (in its transaction). Semicolons inside
/// quotes (`'…'`, `"…"`), dollar-quoted bodies (`$$…$$`, `$tag$…$tag$`) and comments
/// (`-- …`, `/* … */`) do not split. Not handled: nested block comments.
enum SQLStatementSplitter {
    static func split(_ script: String) -> [String] {
        let bytes = Array(script.utf8)
        var statements: [String] = []
        var start = 0
        var index = 0

        func flush(upTo end: Int) {
            let text = String(decoding: bytes[start..<end], as: UTF8.self).trimmingWhitespace
            if !text.isEmpty && !Self.isOnlyComments(text) { statements.append(text) }
        }

        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                let escapes = byte == UInt8(ascii: "'") && index > 0 && bytes[index - 1] | 0x20 == UInt8(ascii: "e")
                index = Self.skipQuoted(bytes, from: index, quote: byte, backslashEscapes: escapes)
            case UInt8(ascii: "-") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "-"):
                while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "*"):
                index += 2
                while index + 1 < bytes.count && !(bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/")) { index += 1 }
                index += 2
            case UInt8(ascii: "$"):
                index = Self.skipDollarQuoted(bytes, from: index)
            case UInt8(ascii: ";"):
                flush(upTo: index)
                index += 1
                start = index
            default:
                index += 1
            }
        }
        if start < bytes.count { flush(upTo: bytes.count) }
        return statements
    }

    /// Index after the closing quote (a doubled quote is an escaped one).
    private static func skipQuoted(_ bytes: [UInt8], from open: Int, quote: UInt8, backslashEscapes: Bool) -> Int {
        var index = open + 1
        while index < bytes.count {
            if backslashEscapes && bytes[index] == UInt8(ascii: "\\") {
                index += 2
                continue
            }
            if bytes[index] == quote {
                if index + 1 < bytes.count && bytes[index + 1] == quote {
                    index += 2
                    continue
                }
                return index + 1
            }
            index += 1
        }
        return index
    }

    /// Index after a `$tag$…$tag$` body, or after the `$` when it does not open one (e.g. `$1`).
    private static func skipDollarQuoted(_ bytes: [UInt8], from open: Int) -> Int {
        var tagEnd = open + 1
        while tagEnd < bytes.count,
            bytes[tagEnd] == UInt8(ascii: "_") || (bytes[tagEnd] | 0x20 >= UInt8(ascii: "a") && bytes[tagEnd] | 0x20 <= UInt8(ascii: "z"))
                || (tagEnd > open + 1 && bytes[tagEnd] >= UInt8(ascii: "0") && bytes[tagEnd] <= UInt8(ascii: "9"))
        {
            tagEnd += 1
        }
        guard tagEnd < bytes.count, bytes[tagEnd] == UInt8(ascii: "$") else { return open + 1 }
        let tag = Array(bytes[open...tagEnd])
        var index = tagEnd + 1
        while index + tag.count <= bytes.count {
            if bytes[index] == UInt8(ascii: "$") && Array(bytes[index..<(index + tag.count)]) == tag {
                return index + tag.count
            }
            index += 1
        }
        return bytes.count
    }

    private static func isOnlyComments(_ text: String) -> Bool {
        text.split(separator: "\n").allSatisfy { $0.trimmingCharacters(in: .whitespaces).hasPrefix("--") }
    }
}

/// Encodes an identifier as one NATS subject token.
///
/// Bytes in `[A-Za-z0-9_-]` pass through; every other byte (including `.`, `*`, `>`, `~`,
/// whitespace and non-ASCII) becomes `~XX` (upper-case hex). The encoding is reversible and
/// the empty string becomes `~`, so no id can produce an empty token or a wildcard.
public enum SubjectToken {
    /// The token for `identifier`.
    public static func encode(_ identifier: String) -> String {
        if identifier.isEmpty { return "~" }
        if isPlain(identifier) { return identifier }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(identifier.utf8.count * 3)
        for byte in identifier.utf8 {
            if isPlainByte(byte) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "~"))
                bytes.append(hexDigit(byte >> 4))
                bytes.append(hexDigit(byte & 0x0F))
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The identifier a token encodes, or `nil` for a malformed token.
    public static func decode(_ token: Substring) -> String? {
        if token == "~" { return "" }
        if isPlain(token) { return String(token) }
        var bytes: [UInt8] = []
        var iterator = token.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "~") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            } else if isPlainByte(byte) {
                bytes.append(byte)
            } else {
                return nil
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Whether `text` needs no encoding.
    public static func isPlain<S: StringProtocol>(_ text: S) -> Bool {
        text.utf8.allSatisfy(isPlainByte)
    }

    private static func isPlainByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

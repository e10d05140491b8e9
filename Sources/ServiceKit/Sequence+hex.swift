extension Sequence where Element == UInt8 {
    /// The bytes as lowercase hexadecimal digits, two per byte.
    public var lowercaseHex: String {
        var text: [UInt8] = []
        text.reserveCapacity(self.underestimatedCount * 2)
        for byte in self {
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

extension StringProtocol {
    /// Whether this is `count` lowercase hexadecimal digits (a trace id, a span id, a digest).
    public func isLowercaseHex(count: Int) -> Bool {
        self.utf8.count == count && self.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

private let hexDigits = Array("0123456789abcdef".utf8)

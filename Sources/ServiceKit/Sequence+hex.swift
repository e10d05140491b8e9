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

private let hexDigits = Array("0123456789abcdef".utf8)

/// Decodes a UTF-8 byte stream that arrives in chunks split anywhere (a terminal's output) into
/// strings, holding back a chunk's incomplete last character (at most 3 bytes) until the next.
///
/// The strings put together are what `String(decoding:as:)` gives for the whole stream: invalid
/// bytes become U+FFFD the same way (one per maximal invalid subpart), wherever the splits fall.
/// That holds because a lead byte is never a continuation byte: the decoder always starts a new
/// character at the held-back part, whatever came before it.
struct UTF8ChunkDecoder: Sendable {
    /// The held-back start of a character: a valid prefix of a UTF-8 sequence, 1 to 3 bytes.
    private var pending: [UInt8] = []

    init() {}

    /// The text of `bytes` after what was held back, less an incomplete character at its end.
    mutating func decode(_ bytes: [UInt8]) -> String {
        let input = self.pending.isEmpty ? bytes : self.pending + bytes
        let keep = Self.incompleteSuffixLength(input)
        self.pending = Array(input.suffix(keep))
        return String(decoding: input.dropLast(keep), as: UTF8.self)
    }

    /// What is held back, as U+FFFD (the stream ended inside a character), or "" if nothing is.
    mutating func flush() -> String {
        defer { self.pending = [] }
        return String(decoding: self.pending, as: UTF8.self)
    }

    /// The length of the suffix of `bytes` that is a proper prefix of a well-formed UTF-8
    /// sequence (Unicode table 3-7), so that more bytes could complete it; 0 if there is none.
    static func incompleteSuffixLength(_ bytes: [UInt8]) -> Int {
        // The lead byte is at most 3 bytes from the end; look for the last non-continuation byte.
        for length in 1...3 where length <= bytes.count {
            let lead = bytes[bytes.count - length]
            if lead & 0xC0 == 0x80 { continue }  // a continuation byte: the lead is further back
            let needed: Int
            switch lead {
            case 0xC2...0xDF: needed = 2
            case 0xE0...0xEF: needed = 3
            case 0xF0...0xF4: needed = 4
            default: return 0  // ASCII, or a byte that starts no sequence
            }
            guard length < needed else { return 0 }  // complete (or too long): nothing to wait for
            if length >= 2 {
                let second = bytes[bytes.count - length + 1]
                let range: ClosedRange<UInt8> =
                    switch lead {
                    case 0xE0: 0xA0...0xBF
                    case 0xED: 0x80...0x9F
                    case 0xF0: 0x90...0xBF
                    case 0xF4: 0x80...0x8F
                    default: 0x80...0xBF
                    }
                guard range.contains(second) else { return 0 }
            }
            return length
        }
        return 0
    }
}

/// Seed 001's `WebFetchService.stripHTML`, in one linear pass (the seed's regular expressions
/// backtrack: a page of unclosed tags would cost quadratic time): `script` and `style` elements
/// removed, every other tag replaced by a space, whitespace collapsed; then cut to
/// `maxCharacters`. As with the seed's expressions, a `<` with no `>` after it is text, and a
/// `<script>` with no `</script>` after it is an ordinary tag.
enum HTMLText {
    static func strip(_ html: String, maxCharacters: Int = 8_000) -> String {
        let bytes = Array(html.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(min(bytes.count, maxCharacters * 4))
        var index = 0
        var pendingSpace = false
        // Once a closing tag of a kind is not found, none is further on either.
        var unclosed: Set<[UInt8]> = []
        // Once no `>` follows a `<`, none follows a later one.
        var noMoreTagEnds = false
        func emitSpace() { pendingSpace = !out.isEmpty }
        while index < bytes.count {
            let byte = bytes[index]
            // `<[^>]+>`: a tag holds at least one character (`<>` is text).
            if byte == UInt8(ascii: "<"), !noMoreTagEnds, index + 1 < bytes.count, bytes[index + 1] != UInt8(ascii: ">") {
                guard let close = Self.find(UInt8(ascii: ">"), in: bytes, from: index + 1) else {
                    noMoreTagEnds = true
                    continue
                }
                var skipTo = close + 1
                for element in Self.dropped where !unclosed.contains(element) && Self.hasPrefix(bytes, at: index + 1, element) {
                    let boundary = index + 1 + element.count
                    // `<script` then `[^>]*>`: the name must end there (not `<scripted>`).
                    guard boundary < bytes.count, bytes[boundary] == UInt8(ascii: ">") || Self.isSpace(bytes[boundary]) else { continue }
                    if let end = Self.findClosing(element, in: bytes, from: close + 1) {
                        skipTo = end
                    } else {
                        unclosed.insert(element)
                    }
                }
                emitSpace()
                index = skipTo
                continue
            }
            if Self.isSpace(byte) {
                emitSpace()
            } else {
                if pendingSpace {
                    out.append(UInt8(ascii: " "))
                    pendingSpace = false
                }
                out.append(byte)
            }
            index += 1
            if out.count > maxCharacters * 4 { break }
        }
        return String(String(decoding: out, as: UTF8.self).prefix(maxCharacters))
    }

    private static let dropped: [[UInt8]] = [Array("script".utf8), Array("style".utf8)]

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0C || byte == 0x0B
    }

    private static func find(_ target: UInt8, in bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while index < bytes.count {
            if bytes[index] == target { return index }
            index += 1
        }
        return nil
    }

    /// Case-insensitive ASCII prefix.
    private static func hasPrefix(_ bytes: [UInt8], at start: Int, _ prefix: [UInt8]) -> Bool {
        guard start + prefix.count <= bytes.count else { return false }
        for (offset, expected) in prefix.enumerated() where bytes[start + offset] | 0x20 != expected {
            return false
        }
        return true
    }

    /// The index just past `</element>` (its `>`), searching from `start`.
    private static func findClosing(_ element: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while let open = Self.find(UInt8(ascii: "<"), in: bytes, from: index) {
            let end = open + 2 + element.count
            if open + 1 < bytes.count, bytes[open + 1] == UInt8(ascii: "/"), Self.hasPrefix(bytes, at: open + 2, element), end < bytes.count,
                bytes[end] == UInt8(ascii: ">") || Self.isSpace(bytes[end])
            {
                // No `>` after this one: none after a later one either.
                guard let close = Self.find(UInt8(ascii: ">"), in: bytes, from: end) else { return nil }
                return close + 1
            }
            index = open + 1
        }
        return nil
    }
}

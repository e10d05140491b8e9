import ServiceKit

/// `application/x-www-form-urlencoded` pairs and URL queries: every byte but the unreserved
/// ones (`A-Z a-z 0-9 - . _ ~`, RFC 3986 §2.3) percent-encoded, so a value can hold `&`, `=`,
/// `+` or anything else and mean only itself.
enum FormEncoding {
    /// `name=value&…`, each part escaped.
    static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { Self.escape($0.0) + "=" + Self.escape($0.1) }.joined(separator: "&")
    }

    /// `base` with `pairs` added to its query (after `?`, or `&` when it has one already).
    static func url(_ base: String, adding pairs: [(String, String)]) -> String {
        if pairs.isEmpty { return base }
        return base + (base.contains("?") ? "&" : "?") + Self.encode(pairs)
    }

    static func escape(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if byte.isURIUnreserved {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

import Foundation

/// Which addresses a researcher may fetch: by default only public ones, so a goal (or a planner
/// it steers) cannot turn the runner against the services beside it. Loopback, private,
/// link-local, shared (CGNAT), multicast, reserved and unspecified addresses of IPv4 and IPv6
/// (and IPv4 mapped into IPv6) are refused unless `pipeline.research-allow-private` is set.
struct ResearchAddressPolicy: Sendable {
    var allowPrivate: Bool

    /// Why `address` (numeric, as resolved) may not be fetched; nil when it may.
    func refusal(_ address: String) -> String? {
        if self.allowPrivate { return nil }
        if let v4 = Self.ipv4(address) { return Self.refusal(v4).map { "\(address) is \($0)" } }
        if let v6 = Self.ipv6(address) {
            // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible addresses are their IPv4 address.
            if v6[0..<10].allSatisfy({ $0 == 0 }) && ((v6[10] == 0xff && v6[11] == 0xff) || (v6[10] == 0 && v6[11] == 0)) {
                if v6[10] == 0 && v6[0..<16].dropLast(4).allSatisfy({ $0 == 0 }) && v6[12..<16].allSatisfy({ $0 == 0 }) {
                    return "\(address) is the unspecified address"
                }
                if v6[10] == 0 && v6[12..<15].allSatisfy({ $0 == 0 }) && v6[15] == 1 { return "\(address) is loopback" }
                return Self.refusal(Array(v6[12..<16])).map { "\(address) is \($0)" }
            }
            if v6[0] & 0xfe == 0xfc { return "\(address) is a unique local (private) address" }
            if v6[0] == 0xfe && v6[1] & 0xc0 == 0x80 { return "\(address) is link-local" }
            if v6[0] == 0xfe && v6[1] & 0xc0 == 0xc0 { return "\(address) is site-local" }
            if v6[0] == 0xff { return "\(address) is multicast" }
            if v6[0] == 0x20 && v6[1] == 0x01 && v6[2] == 0x0d && v6[3] == 0xb8 { return "\(address) is a documentation address" }
            if v6[0] == 0x00 && v6[1] == 0x64 && v6[2] == 0xff && v6[3] == 0x9b { return "\(address) is NAT64 (reaches IPv4 inside)" }
            // 6to4 (2002::/16) carries an IPv4 address in its next four bytes.
            if v6[0] == 0x20 && v6[1] == 0x02, let inner = Self.refusal(Array(v6[2..<6])) { return "\(address) is 6to4 of \(inner)" }
            if v6[0] == 0x20 && v6[1] == 0x01 && v6[2] == 0 && v6[3] == 0 { return "\(address) is Teredo (reaches IPv4 inside)" }
            // ::ffff:0:0/96 (IPv4-translated) is an IPv4 address too.
            if v6[0..<8].allSatisfy({ $0 == 0 }) && v6[8] == 0xff && v6[9] == 0xff && v6[10] == 0 && v6[11] == 0 {
                return Self.refusal(Array(v6[12..<16])).map { "\(address) is \($0)" }
            }
            return nil
        }
        return "\(address) is not a numeric address"
    }

    private static func refusal(_ b: [UInt8]) -> String? {
        switch (b[0], b[1]) {
        case (0, _): "the unspecified (this) network"
        case (10, _): "private (10/8)"
        case (127, _): "loopback"
        case (169, 254): "link-local (169.254/16)"
        case (172, 16...31): "private (172.16/12)"
        case (192, 168): "private (192.168/16)"
        case (100, 64...127): "shared address space (100.64/10)"
        case (192, 0) where b[2] == 0 || b[2] == 2: "reserved (192.0.0/24, 192.0.2/24)"
        case (198, 18...19): "benchmarking (198.18/15)"
        case (198, 51) where b[2] == 100: "documentation (198.51.100/24)"
        case (203, 0) where b[2] == 113: "documentation (203.0.113/24)"
        case (224...239, _): "multicast"
        case (240...255, _): "reserved (240/4) or broadcast"
        default: nil
        }
    }

    static func ipv4(_ text: String) -> [UInt8]? {
        var address = in_addr()
        guard inet_pton(AF_INET, text, &address) == 1 else { return nil }
        return withUnsafeBytes(of: address.s_addr) { Array($0) }
    }

    static func ipv6(_ text: String) -> [UInt8]? {
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        return withUnsafeBytes(of: address) { Array($0) }
    }
}

import Foundation
import NIOPosix

/// Which addresses a service may connect to on a user's behalf (pipeline-runner's researcher,
/// terminal-broker's SSH hosts): by default only public ones, so a goal or a registered host
/// cannot turn a service against the services beside it. Loopback, private, link-local (the
/// cloud metadata address), shared (CGNAT), multicast, reserved and unspecified addresses of
/// IPv4 and IPv6 (and IPv4 inside IPv6) are refused unless `allowPrivate` is set or the address
/// is in one of `allowedNetworks`, which an operator lists.
public struct AddressPolicy: Sendable {
    public var allowPrivate: Bool
    /// Networks allowed whatever they are (an operator's list).
    public var allowedNetworks: [IPNetwork]

    public init(allowPrivate: Bool = false, allowedNetworks: [IPNetwork] = []) {
        self.allowPrivate = allowPrivate
        self.allowedNetworks = allowedNetworks
    }

    /// Why `address` (numeric, as resolved) may not be reached; nil when it may.
    public func refusal(_ address: String) -> String? {
        if self.allowPrivate { return nil }
        if let bytes = Self.ipv4(address) ?? Self.ipv6(address) {
            // An IPv4 address mapped into IPv6 (::ffff:a.b.c.d) is its IPv4 address here too.
            let mapped = bytes.count == 16 && bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
            let candidates = mapped ? [bytes, Array(bytes[12..<16])] : [bytes]
            if candidates.contains(where: { candidate in self.allowedNetworks.contains { $0.contains(candidate) } }) { return nil }
        }
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

    /// `text`'s four bytes when it is a numeric IPv4 address.
    public static func ipv4(_ text: String) -> [UInt8]? {
        var address = in_addr()
        guard inet_pton(AF_INET, text, &address) == 1 else { return nil }
        return withUnsafeBytes(of: address.s_addr) { Array($0) }
    }

    /// `text`'s sixteen bytes when it is a numeric IPv6 address.
    public static func ipv6(_ text: String) -> [UInt8]? {
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        return withUnsafeBytes(of: address) { Array($0) }
    }

    /// Every address `host` resolves to (numeric, without an IPv6 scope), off the event loops.
    public static func resolve(_ host: String) async throws -> [String] {
        try await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var result: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { throw ResolveError(host: host) }
            defer { freeaddrinfo(first) }
            var addresses: [String] = []
            var cursor: UnsafeMutablePointer<addrinfo>? = first
            while let info = cursor {
                var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                if getnameinfo(info.pointee.ai_addr, info.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 {
                    let address = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    // A scoped IPv6 address (fe80::1%eth0) is judged without its scope.
                    addresses.append(address.split(separator: "%").first.map(String.init) ?? address)
                }
                cursor = info.pointee.ai_next
            }
            return addresses
        }
    }

    /// A name that did not resolve.
    public struct ResolveError: Error, CustomStringConvertible {
        public var host: String
        public var description: String { "\(self.host) did not resolve" }
    }
}

/// A network in CIDR notation (`10.0.0.0/8`, `127.0.0.1`, `fd00::/8`); an address alone is a
/// network of one.
public struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    public let bytes: [UInt8]
    public let prefixLength: Int

    /// nil when `text` is not an address with an optional `/prefix` that fits it.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = AddressPolicy.ipv4(String(parts[0])) ?? AddressPolicy.ipv6(String(parts[0])) else { return nil }
        let length = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
        guard let length, (0...(bytes.count * 8)).contains(length) else { return nil }
        self.bytes = bytes
        self.prefixLength = length
    }

    /// A comma-separated list of networks; nil when any is not one.
    public static func list(_ text: String) -> [IPNetwork]? {
        var networks: [IPNetwork] = []
        for item in text.split(separator: ",") {
            let trimmed = item.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            guard let network = IPNetwork(trimmed) else { return nil }
            networks.append(network)
        }
        return networks
    }

    /// Whether `address` (4 or 16 bytes) is in the network.
    public func contains(_ address: [UInt8]) -> Bool {
        guard address.count == self.bytes.count else { return false }
        var remaining = self.prefixLength
        for (mine, theirs) in zip(self.bytes, address) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xff : ~(0xff >> remaining)
            if mine & mask != theirs & mask { return false }
            remaining -= 8
        }
        return true
    }

    public var description: String {
        let text =
            self.bytes.count == 4
            ? self.bytes.map(String.init).joined(separator: ".")
            : stride(from: 0, to: 16, by: 2).map { String(UInt16(self.bytes[$0]) << 8 | UInt16(self.bytes[$0 + 1]), radix: 16) }.joined(
                separator: ":"
            )
        return "\(text)/\(self.prefixLength)"
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a request comes from, for limits per source: the peer, or, when the peer is one of
/// our trusted proxies (the edge), the address the proxy saw, the last hop of
/// `X-Forwarded-For` (the hops before it are the client's word and are ignored).
public enum ClientAddress {
    /// - Parameters:
    ///   - peer: the connection's remote address; nil only for in-process test requests,
    ///     which count as coming through a trusted proxy.
    ///   - trustedProxies: addresses whose `X-Forwarded-For` is believed; `*` trusts every
    ///     peer (a service only the edge can reach, as in the compose stack).
    public static func resolve(peer: String?, forwardedFor: String?, trustedProxies: Set<String>) -> String {
        let trusted = peer.map { trustedProxies.contains("*") || trustedProxies.contains($0) } ?? true
        guard trusted, let forwardedFor,
            let last = forwardedFor.split(separator: ",").last?.trimmingCharacters(in: .whitespaces), !last.isEmpty
        else {
            return peer ?? "local"
        }
        return String(last.prefix(64))
    }

    /// The key a limit per source counts `address` under: an IPv4 address itself, an IPv6
    /// address by its /64 (one host is given a whole /64, so its addresses are one source).
    public static func limitKey(_ address: String) -> String {
        guard address.contains(":") else { return address }
        var bytes = in6_addr()
        guard inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        let prefix = withUnsafeBytes(of: &bytes) { Array($0.prefix(8)) }
        return prefix.map { String($0, radix: 16) }.joined(separator: ".") + "/64"
    }
}

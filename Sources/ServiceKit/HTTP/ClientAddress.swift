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
}

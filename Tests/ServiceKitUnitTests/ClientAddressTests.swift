import ServiceKit
import Testing

/// Which address a request counts as coming from.
@Suite struct ClientAddressTests {
    let trusted: Set<String> = ["127.0.0.1", "::1"]

    @Test func aTrustedProxysLastHopIsTheClient() {
        #expect(ClientAddress.resolve(peer: "127.0.0.1", forwardedFor: "10.0.0.1, 203.0.113.5", trustedProxies: self.trusted) == "203.0.113.5")
        #expect(ClientAddress.resolve(peer: "::1", forwardedFor: "203.0.113.5", trustedProxies: self.trusted) == "203.0.113.5")
    }

    @Test func anyOtherPeerIsItselfWhateverItForwards() {
        #expect(ClientAddress.resolve(peer: "198.51.100.1", forwardedFor: "203.0.113.5", trustedProxies: self.trusted) == "198.51.100.1")
        #expect(ClientAddress.resolve(peer: "127.0.0.1", forwardedFor: nil, trustedProxies: self.trusted) == "127.0.0.1")
        #expect(ClientAddress.resolve(peer: "127.0.0.1", forwardedFor: " , ", trustedProxies: self.trusted) == "127.0.0.1")
    }

    @Test func aWildcardTrustsEveryPeerAndInProcessRequestsCountAsProxied() {
        #expect(ClientAddress.resolve(peer: "172.18.0.5", forwardedFor: "203.0.113.5", trustedProxies: ["*"]) == "203.0.113.5")
        #expect(ClientAddress.resolve(peer: nil, forwardedFor: "203.0.113.5", trustedProxies: self.trusted) == "203.0.113.5")
        #expect(ClientAddress.resolve(peer: nil, forwardedFor: nil, trustedProxies: self.trusted) == "local")
    }

    @Test func anIPv6SourceIsLimitedByItsSlash64() {
        #expect(ClientAddress.limitKey("203.0.113.5") == "203.0.113.5")
        let a = ClientAddress.limitKey("2001:db8:1:2::1")
        let b = ClientAddress.limitKey("2001:db8:1:2:ffff:ffff:ffff:ffff")
        let c = ClientAddress.limitKey("2001:db8:1:3::1")
        #expect(a == b && a != c)
        #expect(ClientAddress.limitKey("not:an:address") == "not:an:address")
    }
}

import ServiceKit
import Testing

@Suite struct AddressPolicyTests {
    let policy = AddressPolicy(allowPrivate: false)

    @Test func refusesInternalAddresses() {
        for address in [
            "127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
            "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
            "::ffff:169.254.169.254", "ff02::1", "64:ff9b::a00:1", "not-an-address", "2002:7f00:1::", "2001:0:4136:e378::1",
            "::ffff:0:a00:1",
        ] {
            #expect(self.policy.refusal(address) != nil, "\(address) must be refused")
        }
    }

    @Test func allowsPublicAddresses() {
        for address in ["93.184.216.34", "8.8.8.8", "172.32.0.1", "192.169.0.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            #expect(self.policy.refusal(address) == nil, "\(address) must be allowed")
        }
        #expect(AddressPolicy(allowPrivate: true).refusal("127.0.0.1") == nil)
    }

    @Test func allowedNetworksOpenWhatAnOperatorLists() {
        let networks = try! #require(IPNetwork.list("127.0.0.1/32, 10.1.0.0/16,fd00::/8"))
        let policy = AddressPolicy(allowedNetworks: networks)
        for address in ["127.0.0.1", "10.1.255.3", "fd12::1", "8.8.8.8", "::ffff:127.0.0.1", "::ffff:10.1.0.9"] {
            #expect(policy.refusal(address) == nil, "\(address)")
        }
        for address in ["127.0.0.2", "10.2.0.1", "169.254.169.254", "fe80::1"] { #expect(policy.refusal(address) != nil, "\(address)") }
        #expect(IPNetwork("10.0.0.0/33") == nil && IPNetwork("host") == nil && IPNetwork.list("10.0.0.0/8,x") == nil)
        #expect(IPNetwork("0.0.0.0/0")!.contains([1, 2, 3, 4]) && IPNetwork("10.0.0.0/9")!.contains([10, 127, 0, 1]))
        #expect(!IPNetwork("10.0.0.0/9")!.contains([10, 128, 0, 1]))
    }
}

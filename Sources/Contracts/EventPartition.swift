/// The partition a tenant's events travel in: the second token of every event subject
/// (``Subjects/event(tenant:swarm:agent:kind:)``), so that a consumer that serves a share of the
/// tenants subscribes to its partitions (``Subjects/events(partition:)``) and never to every
/// event.
///
/// The count is fixed: every service must agree on it, and changing it moves tenants between
/// partitions (a deployment changes it only with every service stopped). 32 partitions bound
/// health-monitor's useful replicas at 32 and the subscriptions a replica holds at 32.
public struct EventPartition: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// How many partitions there are.
    public static let count = 32

    /// Every partition, in order.
    public static var all: [EventPartition] { (0..<Self.count).map { EventPartition(unchecked: $0) } }

    /// 0 ..< ``count``.
    public let index: Int

    private init(unchecked index: Int) {
        self.index = index
    }

    /// The partition numbered `index`; nil outside 0 ..< ``count``.
    public init?(_ index: Int) {
        guard (0..<Self.count).contains(index) else { return nil }
        self.index = index
    }

    /// The partition of `tenant`: its id's FNV-1a hash, spread by MurmurHash3's finaliser (FNV-1a's
    /// low bits depend only on the bytes' low bits), modulo ``count``.
    public init(tenant: String) {
        self.index = Int(Self.mixed(Self.fnv1a(tenant.utf8)) % UInt64(Self.count))
    }

    public var description: String { String(self.index) }

    public static func < (lhs: EventPartition, rhs: EventPartition) -> Bool { lhs.index < rhs.index }

    /// The partition a subject token names; nil for anything but a plain decimal in range.
    init?(token: Substring) {
        guard !token.isEmpty, token.count <= 2, token.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            token == "0" || !token.hasPrefix("0"), let index = Int(token)
        else { return nil }
        self.init(index)
    }

    /// FNV-1a, 64 bits.
    public static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return hash
    }

    /// MurmurHash3's 64-bit finaliser.
    public static func mixed(_ hash: UInt64) -> UInt64 {
        var h = hash
        h ^= h >> 33
        h &*= 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h &*= 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return h
    }
}

import Synchronization

/// How many WebSockets each tenant holds open on this replica, bounded: one tenant cannot use
/// up the replica's connections (or its memory, a queue each) for the others.
final class TenantConnections: Sendable {
    let maxPerTenant: Int
    private let counts = Mutex<[String: Int]>([:])

    init(maxPerTenant: Int) {
        self.maxPerTenant = maxPerTenant
    }

    /// Takes a connection slot of `tenant`; false when it holds its maximum.
    func acquire(_ tenant: String) -> Bool {
        self.counts.withLock { counts in
            let count = counts[tenant, default: 0]
            guard count < self.maxPerTenant else { return false }
            counts[tenant] = count + 1
            return true
        }
    }

    /// Gives back a slot ``acquire(_:)`` took.
    func release(_ tenant: String) {
        self.counts.withLock { counts in
            let count = counts[tenant, default: 0] - 1
            counts[tenant] = count > 0 ? count : nil
        }
    }

    /// The slots `tenant` holds.
    func count(_ tenant: String) -> Int { self.counts.withLock { $0[tenant, default: 0] } }
}

import Synchronization

/// Planner calls in flight per tenant on this replica (each holds a request open for as long as
/// the provider takes): past `perTenant`, a tenant's next `POST /v1/pipelines` is refused (429)
/// instead of queueing more paid calls.
final class PlannerCalls: Sendable {
    let perTenant: Int
    private let counts = Mutex<[String: Int]>([:])

    static let defaultPerTenant = 4

    init(perTenant: Int) {
        self.perTenant = perTenant
    }

    /// Takes a slot of `tenant`'s; false when it has none free.
    func enter(_ tenant: String) -> Bool {
        self.counts.withLock { counts in
            guard counts[tenant, default: 0] < self.perTenant else { return false }
            counts[tenant, default: 0] += 1
            return true
        }
    }

    func leave(_ tenant: String) {
        self.counts.withLock { counts in
            let left = counts[tenant, default: 1] - 1
            counts[tenant] = left > 0 ? left : nil
        }
    }
}

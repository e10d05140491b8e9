public import PostgresNIO
import Synchronization

/// One dependency `/readyz` checks.
public struct ReadinessCheck: Sendable {
    public let name: String
    let probe: @Sendable () async -> Bool

    public init(name: String, probe: @escaping @Sendable () async -> Bool) {
        self.name = name
        self.probe = probe
    }

    /// Ready while the connection is connected (not reconnecting, draining or closed).
    public static func nats(_ connection: NATSConnection) -> ReadinessCheck {
        ReadinessCheck(name: "nats") { connection.status == .connected }
    }

    /// Ready while `SELECT 1` answers within `timeout`.
    public static func postgres(_ client: PostgresClient, timeout: Duration = .seconds(1)) -> ReadinessCheck {
        ReadinessCheck(name: "postgres") {
            let answered = try? await withDeadline(timeout, orThrow: CancellationError()) {
                // Read to the end: a failure after the row description comes only to a reader.
                _ = try await client.query("SELECT 1").collect()
                return true
            }
            return answered ?? false
        }
    }
}

/// The checks `/readyz` runs: those known when the routes are added, and those a service's
/// assemble step adds afterwards.
public final class ReadinessChecks: Sendable {
    private let checks: Mutex<[ReadinessCheck]>

    public init(_ checks: [ReadinessCheck] = []) {
        self.checks = Mutex(checks)
    }

    public func append(_ more: [ReadinessCheck]) {
        self.checks.withLock { $0 += more }
    }

    var all: [ReadinessCheck] { self.checks.withLock { $0 } }
}

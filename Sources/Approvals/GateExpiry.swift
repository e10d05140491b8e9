import Foundation
import Logging
import ServiceKit
import ServiceLifecycle

/// Settles the gates nobody decided in time, every second: each with the configured expiry
/// outcome (reject unless `approvals.expiry-outcome` is approve; a gate with options is
/// cancelled, as ACP answers it). So a gate ends at most about a second after its expiry.
struct GateExpiry: Service {
    let store: GateStore
    let outbox: GateOutbox
    let allows: Bool
    let logger: Logger

    /// Gates settled per transaction; more wait for the next one.
    static let batch = 500

    func run() async throws {
        await repeatUntilShutdown(every: .seconds(1)) {
            await self.sweep()
        }
    }

    /// Expires what is due now; returns how many gates it settled.
    @discardableResult
    func sweep(now: Date = Date.nowMilliseconds) async -> Int {
        var total = 0
        do {
            while true {
                let allows = self.allows
                let expired = try await self.store.expire(now: now, limit: Self.batch) { gate in
                    GateRules.expiryOutcome(allow: allows, options: gate.options, after: Int(gate.expiresAt.timeIntervalSince(gate.requestedAt)))
                }
                total += expired.count
                if !expired.isEmpty { self.outbox.kick() }
                if expired.count < Self.batch { break }
            }
        } catch {
            self.logger.warning("expiring gates failed", metadata: ["error": "\(String(reflecting: error))"])
        }
        return total
    }
}

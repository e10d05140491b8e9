import Foundation
import Logging
import ServiceKit
import ServiceLifecycle

/// Settles the gates nobody decided in time, every second: each `expired` with the configured
/// outcome (reject unless `approvals.expiry-outcome` is approve; a gate with options never
/// allows, and its ACP answer is `cancelled`). So a gate ends at most about a second after its
/// expiry (and a decision that comes later finds it expired).
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

    /// What expiry settles `gate` to (``GateRules/expiryOutcome(allow:options:after:)``).
    static func outcome(_ gate: Gate, allows: Bool) -> GateRules.Outcome {
        GateRules.expiryOutcome(allow: allows, options: gate.options, after: Int(gate.expiresAt.timeIntervalSince(gate.requestedAt)))
    }

    /// Expires what is due now; returns how many gates it settled.
    @discardableResult
    func sweep(now: Date = Date.nowMilliseconds) async -> Int {
        var total = 0
        do {
            while true {
                let allows = self.allows
                let expired = try await self.store.expire(now: now, limit: Self.batch) { Self.outcome($0, allows: allows) }
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

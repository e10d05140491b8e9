import Logging
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Forgets the devices control-api revokes (a sign-out, a lost phone): their registration,
/// preferences and pending pushes go within `interval` of the revocation reaching this replica,
/// not only when a push for them comes up, and so before the revocation list forgets the entry
/// (it keeps one for the longest token lifetime). It scans only when the list changed (and once
/// at start, for revocations made while the notifier was down).
struct RevocationSweep: Service {
    let devices: DeviceStore
    let jobs: JobStore
    let revocations: RevocationList
    let interval: Duration
    let logger: Logger

    /// Devices read per query of a sweep.
    static let page = 1000

    func run() async throws {
        // The list generation the last sweep covered.
        let seen = Mutex(-1)
        await repeatUntilShutdown(every: self.interval) {
            let generation = self.revocations.generation
            guard self.revocations.isLoaded, seen.withLock({ $0 }) != generation else { return }
            do {
                try await self.sweep()
                seen.withLock { $0 = generation }
            } catch {
                self.logger.warning("revocation sweep failed", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    private func sweep() async throws {
        var after: (tenant: String, device: String)?
        while true {
            let page = try await self.devices.devices(after: after, limit: Self.page)
            for device in page where self.revocations.isRevoked(tenant: device.tenant, subject: device.device) {
                try await self.jobs.forget(tenant: device.tenant, device: device.device)
                self.logger.info("a revoked device is forgotten", metadata: ["tenant": "\(device.tenant)", "device": "\(device.device)"])
            }
            guard page.count == Self.page, let last = page.last else { return }
            after = last
        }
    }
}

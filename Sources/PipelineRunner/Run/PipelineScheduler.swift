import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Runs pipelines on this replica: claims runnable ones (leases in Postgres, so replicas never
/// run one twice) up to ``PipelineSettings/maxRunning`` at once, renews their leases, and
/// hears the replicas' change notices (a terminate cancels the call in flight here; a resume or
/// a decision makes work to claim). Each claimed pipeline runs in a ``PipelineWorker`` task; a
/// lease that could not be renewed cancels its task (another replica may hold it now).
final class PipelineScheduler: Service, Sendable {
    let store: PipelineStore
    let worker: PipelineWorker
    let connection: NATSConnection
    let subjects: Subjects
    let settings: PipelineSettings
    let logger: Logger
    let wakeUps = WakeUps(every: .seconds(1))
    private let running = Mutex<[PipelineStore.Claim: Task<Void, Never>]>([:])
    /// When the leases were last renewed (or the first claim made): past a lease's length
    /// without a renewal, the tasks stop, as another replica may hold their pipelines by then.
    private let renewed = Mutex<ContinuousClock.Instant>(.now)

    init(store: PipelineStore, worker: PipelineWorker, connection: NATSConnection, subjects: Subjects, settings: PipelineSettings, logger: Logger) {
        self.store = store
        self.worker = worker
        self.connection = connection
        self.subjects = subjects
        self.settings = settings
        self.logger = logger
    }

    /// Pipelines running on this replica now.
    var runningCount: Int { self.running.withLock { $0.count } }

    func run() async throws {
        let changes = try await self.connection.subscribe(to: self.subjects.pipelineChanged, buffering: .dropNewest(maxMessages: 10_000))
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await cancelWhenGracefulShutdown {
                    for await message in changes {
                        guard let change = try? JSONDecoder().decode(PipelineChange.self, from: Data(message.payload)) else { continue }
                        if change.change == "terminate" { self.cancel(PipelineStore.Claim(tenant: change.tenant, id: change.pipelineId)) }
                        self.wakeUps.kick()
                    }
                }
                changes.unsubscribe()
            }
            group.addTask {
                await repeatUntilShutdown(every: .seconds(max(1, self.settings.leaseSeconds / 3))) { await self.renew() }
            }
            group.addTask {
                await self.wakeUps.run { await self.claim() }
                // Shutting down: the calls in flight are cancelled; their stages run again elsewhere.
                let tasks = self.running.withLock { Array($0.values) }
                for task in tasks { task.cancel() }
                for task in tasks { await task.value }
            }
            await group.waitForAll()
        }
    }

    /// Claims what fits; true when it filled every slot (more may wait).
    private func claim() async -> Bool {
        let free = self.settings.maxRunning - self.runningCount
        guard free > 0 else { return false }
        let claims: [PipelineStore.Claim]
        do {
            claims = try await self.store.claim(owner: self.worker.owner, limit: free, leaseSeconds: self.settings.leaseSeconds)
        } catch {
            self.logger.warning("cannot claim pipelines", metadata: ["error": "\(String(reflecting: error))"])
            return false
        }
        for claim in claims { self.start(claim) }
        return claims.count == free
    }

    private func start(_ claim: PipelineStore.Claim) {
        self.running.withLock { running in
            guard running[claim] == nil else { return }
            running[claim] = Task {
                await self.worker.run(claim)
                // Forgotten here first: a claim of the same pipeline after the release starts anew.
                self.running.withLock { _ = $0.removeValue(forKey: claim) }
                try? await self.store.release(owner: self.worker.owner, claim)
                // Its slot is free, and it may be runnable again (a resume came meanwhile).
                self.wakeUps.kick()
            }
        }
    }

    private func cancel(_ claim: PipelineStore.Claim) {
        self.running.withLock { $0[claim] }?.cancel()
    }

    private func renew() async {
        let claims = self.running.withLock { Array($0.keys) }
        guard !claims.isEmpty else {
            self.renewed.withLock { $0 = .now }
            return
        }
        do {
            let asked = ContinuousClock.now
            let held = try await withDeadline(.seconds(max(1, self.settings.leaseSeconds / 3)), orThrow: CancellationError()) {
                try await self.store.renew(owner: self.worker.owner, claims, leaseSeconds: self.settings.leaseSeconds)
            }
            self.renewed.withLock { $0 = asked }
            let lost = self.running.withLock { running in claims.filter { !held.contains($0) }.compactMap { running[$0] } }
            for task in lost { task.cancel() }
        } catch {
            self.logger.warning("cannot renew pipeline leases", metadata: ["error": "\(String(reflecting: error))"])
            // Two thirds of a lease since the last renewal that was asked for: stop before another
            // replica may take the pipelines.
            if ContinuousClock.now - self.renewed.withLock({ $0 }) >= .seconds(self.settings.leaseSeconds) * 2 / 3 {
                // The leases have run out: another replica may run these pipelines now.
                for task in self.running.withLock({ Array($0.values) }) { task.cancel() }
            }
        }
    }
}

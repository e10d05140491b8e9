import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle

/// Tells every replica that a tenant's thresholds changed (core NATS, the tenant's subject),
/// and, on hearing it, loads them and hands them to the engine: a change applies at once. A
/// lost notice is repaired by the periodic reload (every minute).
final class ThresholdNotices: Service, Sendable {
    let connection: NATSConnection
    let subjects: Subjects
    let store: ThresholdStore
    let engine: HealthEngine
    let logger: Logger

    init(connection: NATSConnection, subjects: Subjects, store: ThresholdStore, engine: HealthEngine, logger: Logger) {
        self.connection = connection
        self.subjects = subjects
        self.store = store
        self.engine = engine
        self.logger = logger
    }

    /// Applies `tenant`'s new thresholds here at once, and announces them to the other replicas.
    func changed(tenant: String, _ set: ThresholdSet) async {
        await self.engine.setThresholds(set, tenant: tenant)
        try? self.connection.publish([], to: self.subjects.healthThresholdsChanged(tenant: tenant))
    }

    func run() async throws {
        let subscription = try await self.connection.subscribe(
            to: self.subjects.allHealthThresholdChanges,
            buffering: .dropNewest(maxMessages: 10_000)
        )
        let reload = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(60))
                guard let sets = try? await self.store.all() else { continue }
                for (tenant, set) in sets { await self.engine.setThresholds(set, tenant: tenant) }
            }
        }
        defer { reload.cancel() }
        await withTaskCancellationOrGracefulShutdownHandler {
            for await message in subscription {
                guard let tenant = self.subjects.parseHealthThresholdsChanged(message.subject) else { continue }
                do {
                    await self.engine.setThresholds(try await self.store.set(tenant: tenant), tenant: tenant)
                } catch {
                    self.logger.warning("thresholds not reloaded", metadata: ["tenant": "\(tenant)", "error": "\(String(reflecting: error))"])
                }
            }
        } onCancelOrGracefulShutdown: {
            subscription.unsubscribe()
        }
    }
}

import Logging
import ServiceKit
import ServiceLifecycle

/// Publishes what the request path could not: commands committed to Postgres whose publish
/// to JetStream failed or never happened (a replica that died between the two). JetStream
/// stores a command id once, so a command published twice is delivered once.
struct CommandDispatcher: Service {
    let store: ControlStore
    let bus: CommandBus
    let logger: Logger
    var interval: Duration = .seconds(2)

    func run() async throws {
        await repeatUntilShutdown(every: self.interval) {
            await self.dispatchPending()
        }
    }

    /// One pass: every unpublished, unexpired command older than the request path's own try.
    func dispatchPending() async {
        do {
            let pending = try await self.store.unpublished(olderThan: .seconds(2), limit: 500)
            guard !pending.isEmpty else { return }
            let stored = await self.bus.publish(pending, headers: [:])
            try await self.store.markPublished(stored)
            self.logger.notice("published commands the request path had not", metadata: ["count": "\(stored.count)"])
        } catch {
            self.logger.warning("dispatching pending commands failed", metadata: ["error": "\(String(reflecting: error))"])
        }
    }
}

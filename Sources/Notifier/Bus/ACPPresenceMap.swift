import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Hears stream-fanout's ACP presence (every replica hears every announcement: no queue group)
/// and answers whether a device follows an ACP thread live, so that the thread's silent push
/// skips it. An announcement whose subject names another tenant than its body is ignored.
final class ACPPresenceMap: Service, Sendable {
    private let nats: NATSConnection
    private let subjects: Subjects
    private let logger: Logger
    private let table: Mutex<ACPPresenceTable>

    init(nats: NATSConnection, subjects: Subjects, maxConnections: Int, logger: Logger) {
        self.nats = nats
        self.subjects = subjects
        self.logger = logger
        self.table = Mutex(ACPPresenceTable(maxConnections: maxConnections))
    }

    /// Whether `device` of `tenant` follows `thread` live now.
    func isLive(tenant: String, device: String, thread: String) -> Bool {
        let now = Date().milliseconds
        return self.table.withLock { $0.isLive(tenant: tenant, device: device, thread: thread, now: now) }
    }

    /// Records one announcement (what the subscription does with each).
    func apply(_ presence: ACPPresence) {
        let now = Date().milliseconds
        self.table.withLock { $0.apply(presence, now: now) }
    }

    func run() async throws {
        let subscription = try await self.nats.subscribe(
            to: self.subjects.allACPPresence,
            buffering: .dropNewest(maxMessages: 65_536, maxBytes: 16 << 20)
        )
        await withTaskCancellationOrGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    // Expired announcements go even when nobody asks about their devices.
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(30))
                        let now = Date().milliseconds
                        self.table.withLock { $0.dropExpired(now: now) }
                    }
                }
                for await message in subscription {
                    guard let presence = try? JSONDecoder().decode(ACPPresence.self, from: Data(message.payload)),
                        self.subjects.parseACPPresence(message.subject) == presence.tenant
                    else {
                        self.logger.debug("an ACP presence that does not read; ignored", metadata: ["subject": "\(message.subject)"])
                        continue
                    }
                    self.apply(presence)
                }
                group.cancelAll()
            }
        } onCancelOrGracefulShutdown: {
            subscription.unsubscribe()
        }
    }
}

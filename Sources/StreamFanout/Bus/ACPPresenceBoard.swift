import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Announces which ACP threads each `/v1/acp` connection of this replica follows live
/// (``ACPPresence`` on ``Subjects/acpPresence(tenant:)``): at once when a connection's threads
/// change or it ends, and every `fanout.acp-presence-seconds` for every connection, each
/// announcement holding for three of those. The notifier skips a thread's silent push for a
/// device that follows the thread live.
final class ACPPresenceBoard: Service, Sendable {
    private struct Entry {
        var tenant: String
        var device: String
        var threads: [String]
    }

    private let nats: NATSConnection
    private let subjects: Subjects
    private let interval: Duration
    private let logger: Logger
    private let entries = Mutex<[String: Entry]>([:])

    init(nats: NATSConnection, subjects: Subjects, interval: Duration, logger: Logger) {
        self.nats = nats
        self.subjects = subjects
        self.interval = interval
        self.logger = logger
    }

    /// How long an announcement holds.
    var ttl: Duration { self.interval * 3 }

    // Announcements are published under the lock (a publish only queues bytes in nats.c), so
    // the periodic round can never announce a connection after its change or its end.

    /// `connection` of `device` now follows `threads` live (none: it follows nothing).
    func update(connection: String, tenant: String, device: String, threads: Set<String>) {
        let sorted = threads.sorted()
        self.entries.withLock { entries in
            let before = entries[connection]?.threads ?? []
            entries[connection] = sorted.isEmpty ? nil : Entry(tenant: tenant, device: device, threads: sorted)
            if before != sorted {
                self.announce(tenant: tenant, device: device, connection: connection, threads: sorted, ttl: sorted.isEmpty ? .zero : self.ttl)
            }
        }
    }

    /// `connection` ended.
    func remove(connection: String) {
        self.entries.withLock { entries in
            guard let entry = entries.removeValue(forKey: connection) else { return }
            self.announce(tenant: entry.tenant, device: entry.device, connection: connection, threads: [], ttl: .zero)
        }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: self.interval)
                self.entries.withLock { entries in
                    for (connection, entry) in entries {
                        self.announce(tenant: entry.tenant, device: entry.device, connection: connection, threads: entry.threads, ttl: self.ttl)
                    }
                }
            }
        }
    }

    private func announce(tenant: String, device: String, connection: String, threads: [String], ttl: Duration) {
        let presence = ACPPresence(
            tenant: tenant,
            device: device,
            connection: connection,
            threads: threads,
            ttlMilliseconds: ttl.milliseconds
        )
        do {
            try self.nats.publish(Array(try JSONEncoder().encode(presence)), to: self.subjects.acpPresence(tenant: tenant))
        } catch {
            // The next round announces it again; until then the notifier may push a silent nudge
            // the device did not need.
            self.logger.debug("ACP presence not announced", metadata: ["error": "\(String(reflecting: error))"])
        }
    }
}

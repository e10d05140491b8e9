import Contracts
import EventLog
import Logging
import ServiceKit
import ServiceLifecycle
import Synchronization

/// The tenant feeds of this replica: a feed starts with its tenant's first connection and
/// stops (unsubscribing) with its last. As a service, it runs the tail check of all its feeds:
/// every `fanout.tail-check-seconds`, one query reads the log's heads of the tenants whose feeds
/// have not moved since the previous check, and those behind back-fill.
final class FeedHub: Service, Sendable {
    private struct Entry {
        var feed: TenantFeed
        var subscription: NATSSubscription
        var task: Task<Void, Never>
        var users: Int
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let nats: NATSConnection
    private let subjects: Subjects
    private let reader: EventLogReader
    private let tailCheckInterval: Duration
    private let logger: Logger

    init(nats: NATSConnection, subjects: Subjects, reader: EventLogReader, tailCheckInterval: Duration, logger: Logger) {
        self.nats = nats
        self.subjects = subjects
        self.reader = reader
        self.tailCheckInterval = tailCheckInterval
        self.logger = logger
    }

    /// The tenant's feed, started if need be; pair with ``release(_:)``.
    func acquire(tenant: String) async throws -> TenantFeed {
        if let feed = self.entries.withLock({ entries -> TenantFeed? in
            guard entries[tenant] != nil else { return nil }
            entries[tenant]!.users += 1
            return entries[tenant]!.feed
        }) {
            return feed
        }
        // Subscribe before the feed reads the log's head (see TenantFeed.run), and make sure the
        // server has the subscription.
        let subscription = try await self.nats.subscribe(to: self.subjects.events(tenant: tenant))
        do {
            try await self.nats.flush()
        } catch {
            subscription.unsubscribe()
            throw error
        }
        let feed = TenantFeed(tenant: tenant, subjects: self.subjects, reader: self.reader, logger: self.logger)
        let (winner, loser): (TenantFeed, NATSSubscription?) = self.entries.withLock { entries in
            if entries[tenant] != nil {
                // Another connection started it meanwhile.
                entries[tenant]!.users += 1
                return (entries[tenant]!.feed, subscription)
            }
            let task = Task {
                await feed.run(subscription)
                self.ended(feed)
            }
            entries[tenant] = Entry(feed: feed, subscription: subscription, task: task, users: 1)
            return (feed, nil)
        }
        if let loser { loser.unsubscribe() }
        return winner
    }

    /// Forgets a feed whose subscription ended, so the next connection starts a new one.
    private func ended(_ feed: TenantFeed) {
        self.entries.withLock { entries in
            if entries[feed.tenant]?.feed === feed { entries[feed.tenant] = nil }
        }
    }

    /// Releases a feed from ``acquire(tenant:)``, after `listener` has left it; the last
    /// release stops it.
    func release(_ feed: TenantFeed, leaving listener: (any FeedListener)? = nil) {
        if let listener { feed.leave(listener) }
        let stopped: Entry? = self.entries.withLock { entries in
            guard var entry = entries[feed.tenant], entry.feed === feed else { return nil }
            entry.users -= 1
            if entry.users > 0 {
                entries[feed.tenant] = entry
                return nil
            }
            entries[feed.tenant] = nil
            return entry
        }
        if let stopped {
            stopped.subscription.unsubscribe()
            stopped.task.cancel()
        }
    }

    func run() async throws {
        await repeatUntilShutdown(every: self.tailCheckInterval) { await self.checkTails() }
    }

    /// One round of the tail check.
    func checkTails() async {
        let feeds = self.entries.withLock { $0.values.map(\.feed) }
        let idle = Dictionary(feeds.compactMap { feed in feed.idleHead().map { (feed.tenant, (feed, $0)) } }, uniquingKeysWith: { first, _ in first })
        guard !idle.isEmpty else { return }
        let heads: [String: Int64]
        do {
            heads = try await self.reader.heads(tenants: Array(idle.keys))
        } catch {
            self.logger.warning("tail check cannot read the log's heads", metadata: ["error": "\(String(reflecting: error))"])
            return
        }
        for (tenant, (feed, head)) in idle {
            if let logHead = heads[tenant], logHead > head { await feed.catchUp(toLogHead: logHead) }
        }
    }
}

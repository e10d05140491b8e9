import Contracts
import Foundation
import Logging
import ServiceKit
import Synchronization

/// What follows the tenants of a partition while this replica holds its lease.
protocol PartitionFollower: Sendable {
    /// Starts following the tenants of `partition` (returns at once; the rebuild goes on).
    /// False when it cannot (its subscription failed): the lease is given back.
    func follow(_ partition: EventPartition) async -> Bool
    /// Stops following them: at once nothing of them is applied any more; returns once what
    /// was being applied ended, or after at most a round.
    func unfollow(_ partition: EventPartition) async
}

/// Holds this replica's share of the event partitions through leases in Postgres
/// (``PartitionLeaseStore``), any number of replicas sharing the work.
///
/// Every round (a third of `health.lease-seconds`) the replica marks itself seen, works out the
/// partitions it should follow among the replicas seen (``PartitionAssignment``), takes or
/// renews those (a partition still leased to another replica is taken only once that one gives
/// it back or its lease runs out), then stops following and gives back those it should not
/// hold. So a partition is followed by one replica at a time: a replica stops following
/// everything at its fence, a round before its leases run out (measured on its own clock from
/// the start of the last round that renewed them, while the database counts the lease from
/// later), and no call to the database outlasts the fence. The first round only announces the
/// replica, so that replicas started together see each other before they take anything; the
/// second comes a second later. On shutdown it stops following everything and gives its
/// leases back, so the others take them at their next round.
final class PartitionLeases: Sendable {
    let store: PartitionLeaseStore
    /// This replica's id (random per start).
    let replica: String
    let ttl: Duration
    let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var held: Set<EventPartition> = []
        var rounds = 0
        var claimed = false
    }

    init(
        store: PartitionLeaseStore,
        ttl: Duration,
        logger: Logger,
        replica: String = "\(ProcessInfo.processInfo.hostName)-\(UUID().uuidString.prefix(8))"
    ) {
        self.store = store
        self.ttl = ttl
        self.logger = logger
        self.replica = replica
    }

    /// How often a round runs.
    var interval: Duration { self.ttl / 3 }

    /// The partitions this replica holds now.
    var held: Set<EventPartition> { self.state.withLock { $0.held } }

    /// True once a round found this replica holding its whole share, or, when others keep some
    /// of it longer, two leases after its start (it may hold nothing then).
    var hasClaimed: Bool { self.state.withLock { $0.claimed } }

    /// Runs the rounds until the task is cancelled, then stops following and gives back.
    func run(_ follower: some PartitionFollower) async {
        let clock = ContinuousClock()
        let start = clock.now
        var fenceAt = clock.now
        while !Task.isCancelled {
            let started = clock.now
            do {
                try await self.round(follower, fenceAt: fenceAt, clock: clock, started: start)
                fenceAt = started + self.ttl - self.interval
            } catch {
                self.logger.warning(
                    "partition leases not renewed",
                    metadata: ["replica": "\(self.replica)", "error": "\(String(reflecting: error))"]
                )
            }
            if clock.now >= fenceAt { await self.drop(follower, reason: "its leases could not be renewed in time") }
            // Next round after an interval, or at the fence if that comes first while holding.
            // After the announcing round, a second is enough for replicas started together.
            let rounds = self.state.withLock { $0.rounds }
            var wake = clock.now + (rounds > 1 ? self.interval : min(self.interval, .seconds(1)))
            if !self.held.isEmpty, fenceAt > clock.now, fenceAt < wake { wake = fenceAt }
            try? await Task.sleep(until: wake, clock: clock)
        }
        // In a task of its own: this one is cancelled, and the deadlines would end at once.
        await Task {
            await self.drop(follower, reason: "shutting down")
            do {
                try await self.timed(until: nil) { try await self.store.release(nil, of: self.replica, leaving: true) }
            } catch {
                self.logger.warning("partition leases not given back; they run out", metadata: ["error": "\(String(reflecting: error))"])
            }
        }.value
    }

    /// `body`, given up after an interval or at `fence`, whichever comes first: a database
    /// that does not answer must not hold a round past the fence.
    private func timed<Result: Sendable>(
        until fence: ContinuousClock.Instant?,
        _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        var timeout = self.interval
        if let fence { timeout = min(timeout, fence - ContinuousClock.now) }
        guard timeout > .zero else { throw NoAnswer() }
        return try await withDeadline(timeout, orThrow: NoAnswer(), body)
    }

    /// The database did not answer within a round's interval, or before the fence.
    struct NoAnswer: Error, CustomStringConvertible {
        var description: String { "the partition leases' database did not answer within a round, or before the fence" }
    }

    private func round(
        _ follower: some PartitionFollower,
        fenceAt: ContinuousClock.Instant,
        clock: ContinuousClock,
        started: ContinuousClock.Instant
    ) async throws {
        // Bounded by the fence only while something is followed.
        let fence = self.held.isEmpty ? nil : fenceAt
        let replicas = try await self.timed(until: fence) { try await self.store.heartbeat(self.replica, ttl: self.ttl) }
        let round = self.state.withLock {
            $0.rounds += 1
            return $0.rounds
        }
        guard round > 1 else { return }
        let wanted = PartitionAssignment.wanted(by: self.replica, replicas: replicas)
        let held = self.held
        // Renew and take first, so that giving back (which may wait for followers) never
        // delays the renewal.
        var holding = try await self.timed(until: fence) { try await self.store.claim(wanted, for: self.replica, ttl: self.ttl) }
        let giveBack = held.subtracting(wanted)
        // Held, wanted and not renewed: another replica took it after the lease ran out.
        let lost = held.intersection(wanted).subtracting(holding)
        await self.stop(giveBack.union(lost), follower)
        var failed: Set<EventPartition> = []
        for partition in holding.subtracting(held).sorted() {
            self.state.withLock { _ = $0.held.insert(partition) }
            if await !follower.follow(partition) {
                self.state.withLock { _ = $0.held.remove(partition) }
                failed.insert(partition)
            }
        }
        holding.subtract(failed)
        let release = giveBack.union(failed)
        try await self.timed(until: nil) { try await self.store.release(release, of: self.replica) }
        if holding == wanted || clock.now - started >= self.ttl * 2 {
            self.state.withLock { $0.claimed = true }
        }
        HealthMetrics.partitions.set(holding.count)
        if !giveBack.isEmpty || holding != held {
            self.logger.info(
                "event partitions changed hands",
                metadata: [
                    "replica": "\(self.replica)", "replicas": "\(replicas.count)", "holding": "\(holding.count)",
                    "gaveBack": "\(giveBack.count)", "took": "\(holding.subtracting(held).count)", "lost": "\(lost.count)",
                ]
            )
        }
    }

    /// Stops following `partitions`, all at once (each stop waits up to a round for its follower).
    private func stop(_ partitions: Set<EventPartition>, _ follower: some PartitionFollower) async {
        await withDiscardingTaskGroup { group in
            for partition in partitions {
                group.addTask {
                    await follower.unfollow(partition)
                    self.state.withLock { _ = $0.held.remove(partition) }
                }
            }
        }
    }

    private func drop(_ follower: some PartitionFollower, reason: String) async {
        let held = self.held
        guard !held.isEmpty else { return }
        self.logger.warning("stopped following every partition", metadata: ["replica": "\(self.replica)", "reason": "\(reason)"])
        await self.stop(held, follower)
        HealthMetrics.partitions.set(0)
    }
}

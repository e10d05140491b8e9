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
/// A round (every third of `health.lease-seconds`) is what renews: the replica marks itself
/// seen, works out the partitions it should follow among the replicas seen
/// (``PartitionAssignment``) and takes or renews them (a partition still leased to another
/// replica is taken only once that one gives it back or its lease runs out). What it should no
/// longer hold it stops following at once and gives back beside the rounds, so that a follower
/// slow to settle never delays a renewal; a partition being given back is not taken again
/// until it is. Every call of a round to the database ends by the fence, a round before the
/// leases run out, measured on this replica's clock from the start of the last claim that
/// renewed them (the database counts the lease from later); a replica whose rounds fail until
/// the fence stops following everything. So a partition is followed by one replica at a time.
/// The first round only announces the replica, so that replicas started together see each
/// other before they take anything; the second comes a second later. On shutdown it stops
/// following everything and gives its leases back, so the others take them at their next
/// round.
final class PartitionLeases: Sendable {
    let store: PartitionLeaseStore
    /// This replica's id (random per start).
    let replica: String
    let ttl: Duration
    let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var held: Set<EventPartition> = []
        /// Partitions being given back (not taken again until they are).
        var leaving: Set<EventPartition> = []
        /// The give-backs under way (awaited at shutdown).
        var givingBack: [UUID: Task<Void, Never>] = [:]
        var fence: ContinuousClock.Instant?
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
        while !Task.isCancelled {
            do {
                try await self.round(follower, clock: clock, started: start)
            } catch {
                self.logger.warning(
                    "partition leases not renewed",
                    metadata: ["replica": "\(self.replica)", "error": "\(String(reflecting: error))"]
                )
            }
            let fence = self.state.withLock { $0.fence }
            if let fence, clock.now >= fence { await self.drop(follower, reason: "its leases could not be renewed in time") }
            // The next round after an interval, or early enough to renew before the fence
            // (half an interval before it). After the announcing round, a second is enough for
            // replicas started together.
            let rounds = self.state.withLock { $0.rounds }
            var wake = clock.now + (rounds > 1 ? self.interval : min(self.interval, .seconds(1)))
            if !self.held.isEmpty, let fence { wake = min(wake, max(clock.now, fence - self.interval / 2)) }
            try? await Task.sleep(until: wake, clock: clock)
        }
        // In a task of its own: this one is cancelled, and the deadlines would end at once.
        await Task {
            for task in self.state.withLock({ Array($0.givingBack.values) }) { await task.value }
            await self.drop(follower, reason: Self.shuttingDown)
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

    /// The fence while something is followed (nil otherwise: nothing to stop in time).
    private var fence: ContinuousClock.Instant? {
        self.state.withLock { $0.held.isEmpty ? nil : $0.fence }
    }

    private func round(_ follower: some PartitionFollower, clock: ContinuousClock, started: ContinuousClock.Instant) async throws {
        let replicas = try await self.timed(until: self.fence) { try await self.store.heartbeat(self.replica, ttl: self.ttl) }
        let round = self.state.withLock {
            $0.rounds += 1
            return $0.rounds
        }
        guard round > 1 else { return }
        let wanted = PartitionAssignment.wanted(by: self.replica, replicas: replicas)
        let (held, leaving) = self.state.withLock { ($0.held, $0.leaving) }
        let claimStart = clock.now
        let holding = try await self.timed(until: self.fence) {
            try await self.store.claim(wanted.subtracting(leaving), for: self.replica, ttl: self.ttl)
        }
        self.state.withLock { $0.fence = claimStart + self.ttl - self.interval }

        // Held and not wanted, or wanted and not renewed (another replica took it after the
        // lease ran out): stopped at once, given back beside the rounds.
        let giveBack = held.subtracting(holding)
        if !giveBack.isEmpty { self.giveBack(giveBack, follower) }
        var failed: Set<EventPartition> = []
        for partition in holding.subtracting(held).sorted() {
            self.state.withLock { _ = $0.held.insert(partition) }
            if await !follower.follow(partition) {
                self.state.withLock { _ = $0.held.remove(partition) }
                failed.insert(partition)
            }
        }
        // Leases of this replica it does not follow (a subscription that failed; those left
        // when it stopped at its fence): given back now. Their loss costs a round at most.
        let keep = holding.subtracting(failed).union(self.state.withLock { $0.leaving })
        do {
            try await self.timed(until: self.fence) { try await self.store.release(except: keep, of: self.replica) }
        } catch {
            self.logger.debug("leases not followed not given back yet; they run out", metadata: ["error": "\(String(reflecting: error))"])
        }
        let now = holding.subtracting(failed)
        if now == wanted.subtracting(leaving) && leaving.isEmpty || clock.now - started >= self.ttl * 2 {
            self.state.withLock { $0.claimed = true }
        }
        HealthMetrics.partitions.set(now.count)
        if !giveBack.isEmpty || now != held {
            self.logger.info(
                "event partitions changed hands",
                metadata: [
                    "replica": "\(self.replica)", "replicas": "\(replicas.count)", "holding": "\(now.count)",
                    "gaveBack": "\(giveBack.count)", "took": "\(now.subtracting(held).count)",
                ]
            )
        }
    }

    /// Stops following `partitions` now (the follower forgets them at once), then, beside the
    /// rounds, waits for their followers to settle and gives their leases back.
    private func giveBack(_ partitions: Set<EventPartition>, _ follower: some PartitionFollower) {
        let id = UUID()
        self.state.withLock { state in
            state.held.subtract(partitions)
            state.leaving.formUnion(partitions)
        }
        let task = Task {
            await self.stop(partitions, follower)
            do {
                try await self.timed(until: nil) { try await self.store.release(partitions, of: self.replica) }
            } catch {
                self.logger.warning("partition leases not given back; they run out", metadata: ["error": "\(String(reflecting: error))"])
            }
            self.state.withLock { state in
                state.leaving.subtract(partitions)
                state.givingBack[id] = nil
            }
        }
        self.state.withLock { $0.givingBack[id] = task }
    }

    /// Stops following `partitions`, all at once (each stop waits up to a round for its follower).
    private func stop(_ partitions: Set<EventPartition>, _ follower: some PartitionFollower) async {
        await withDiscardingTaskGroup { group in
            for partition in partitions {
                group.addTask { await follower.unfollow(partition) }
            }
        }
    }

    private static let shuttingDown = "shutting down"

    private func drop(_ follower: some PartitionFollower, reason: String) async {
        let held = self.state.withLock { state in
            let held = state.held
            state.held = []
            return held
        }
        guard !held.isEmpty else { return }
        self.logger.log(
            level: reason == Self.shuttingDown ? .info : .warning,
            "stopped following every partition",
            metadata: ["replica": "\(self.replica)", "reason": "\(reason)"]
        )
        await self.stop(held, follower)
        HealthMetrics.partitions.set(0)
    }
}

public import Logging
public import PostgresNIO
import Synchronization

/// Token buckets in a Postgres table, so that every replica of a service draws on the same one:
/// a key gets `capacity` tokens at once, refilled at `perSecond`, however many replicas its
/// requests reach. The limits that must hold across replicas use it (control-api's sign-ins,
/// ingest's tenant rates, pipeline-runner's creations), each replica's own in-memory buckets
/// (``KeyedTokenBuckets``) asked first where a flood should be refused without a query.
///
/// A bucket that has refilled holds no information: when a new key arrives, buckets idle for a
/// full refill are deleted (a thousand at a time, best effort, skipping rows locked meanwhile),
/// so the table holds about the keys seen in the last refill period. That sweep runs apart from
/// the grant that started it, one at a time per instance: a grant is answered once its own
/// statements are, so a deadline the caller puts on it no longer passes in the sweep (and throws
/// away the tokens the grant took). After ``sweepTimeout`` the instance stops waiting for a sweep
/// and may start another; the statement itself may run on until Postgres ends it.
///
/// What a grant costs: one conditional `UPDATE` when the bucket holds a token; an `UPDATE` and a
/// `SELECT` when it is empty; an `INSERT` more for a new key.
public struct PostgresTokenBuckets: Sendable {
    let client: PostgresClient
    /// The table (``tableSQL(_:)``), in the service's schema; a name of ours, never input.
    let table: String
    /// What every key of these buckets starts with, where one table holds several kinds (each
    /// with its own capacity and rate): only these are forgotten by this instance.
    let keyPrefix: String
    public let capacity: Double
    public let perSecond: Double
    let logger: Logger
    /// Set while this instance's sweep of idle buckets runs.
    private let sweeping = Sweeping()

    private final class Sweeping: Sendable {
        let running = Atomic(false)
    }

    /// How long a sweep may take before this instance may start another (the one under way is
    /// left to end on its own).
    public static let sweepTimeout = Duration.seconds(30)

    private struct SweepTimedOut: Error, CustomStringConvertible {
        var description: String { "the sweep did not end within \(PostgresTokenBuckets.sweepTimeout)" }
    }

    public init(client: PostgresClient, table: String, keyPrefix: String = "", capacity: Double, perSecond: Double, logger: Logger) {
        self.client = client
        self.table = table
        self.keyPrefix = keyPrefix
        self.capacity = max(1, capacity)
        self.perSecond = max(perSecond, 1e-9)
        self.logger = logger
    }

    /// `perMinute` at once, refilled over a minute.
    public init(client: PostgresClient, table: String, perMinute: Int, logger: Logger) {
        self.init(client: client, table: table, capacity: Double(perMinute), perSecond: Double(perMinute) / 60, logger: logger)
    }

    /// The table a service's migration makes for its buckets.
    public static func tableSQL(_ table: String) -> String {
        """
        CREATE TABLE \(table) (
            key text PRIMARY KEY,
            tokens double precision NOT NULL,
            at timestamptz NOT NULL
        );
        CREATE INDEX \(table)_at ON \(table) (at);
        """
    }

    /// Takes one token for `key`: nil if taken, else how long until one is free.
    public func take(_ key: String) async throws -> Duration? {
        try await self.grant(key, upTo: 1).wait
    }

    /// Takes up to `wanted` tokens for `key`, as many as it holds if it holds at least one.
    /// Returns the tokens taken and, when none, how long until one is free.
    public func grant(_ key: String, upTo wanted: Double) async throws -> (granted: Double, wait: Duration?) {
        let (capacity, perSecond, table) = (self.capacity, self.perSecond, self.table)
        let key = self.keyPrefix + key
        let wanted = max(1, wanted)
        // A bucket's tokens now: what it held, refilled for the time since it was last touched
        // (numbers of ours, written into the statement).
        let refilled = "LEAST(\(capacity), tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - at)::float8) * \(perSecond))"
        for _ in 0..<3 {
            // The bucket gives what it holds, up to `wanted`, if it holds a token (the condition
            // is checked again on the row the update locks).
            let taken = try await self.client.write(
                """
                UPDATE \(unescaped: table) AS b
                SET tokens = r.refilled - LEAST(r.refilled, \(wanted)),
                    at = GREATEST(b.at, now())
                FROM (SELECT key, \(unescaped: refilled) AS refilled FROM \(unescaped: table) WHERE key = \(key) FOR UPDATE) AS r
                WHERE b.key = r.key AND r.refilled >= 1
                RETURNING LEAST(r.refilled, \(wanted))
                """,
                logger: self.logger
            )
            for row in taken {
                let granted = try row.decode(Double.self)
                return (granted, nil)
            }
            // Empty: how long until it holds a token again (if it refilled meanwhile, take again).
            let held = try await self.client.query(
                "SELECT \(unescaped: refilled) FROM \(unescaped: table) WHERE key = \(key)",
                logger: self.logger
            )
            var tokens: Double?
            for try await held in held.decode(Double.self) { tokens = held }
            if let tokens {
                if tokens < 1 { return (0, .seconds((1 - tokens) / perSecond)) }
                continue
            }
            // A new key: its bucket made full, less this grant. Another replica may make it
            // first; then the loop takes from that one.
            let granted = min(capacity, wanted)
            let made = try await self.client.write(
                """
                INSERT INTO \(unescaped: table) (key, tokens, at) VALUES (\(key), \(capacity - granted), now())
                ON CONFLICT (key) DO NOTHING RETURNING 1
                """,
                logger: self.logger
            )
            if !made.isEmpty {
                self.sweepIdle()
                return (granted, nil)
            }
        }
        // Made, emptied or refilled by other replicas between this one's looks: try again soon.
        return (0, .seconds(1 / perSecond))
    }

    /// Starts ``forgetIdle()`` in a task of its own (not the request's: neither its priority nor
    /// its task-locals) unless this instance's last one still runs.
    private func sweepIdle() {
        guard self.sweeping.running.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return }
        Task.detached(priority: .background) {
            defer { self.sweeping.running.store(false, ordering: .releasing) }
            await self.forgetIdle()
        }
    }

    /// Deletes up to a thousand buckets idle for a full refill (they hold no information),
    /// skipping rows locked meanwhile; a failure is logged, never the caller's.
    private func forgetIdle() async {
        do {
            let (client, table, keyPrefix, logger) = (self.client, self.table, self.keyPrefix, self.logger)
            let idle = self.capacity / self.perSecond
            try await withDeadline(Self.sweepTimeout, orThrow: SweepTimedOut()) {
                _ = try await client.write(
                    """
                    DELETE FROM \(unescaped: table) WHERE key IN (
                        SELECT key FROM \(unescaped: table)
                        WHERE starts_with(key, \(keyPrefix)) AND at < now() - make_interval(secs => \(idle))
                        LIMIT 1000 FOR UPDATE SKIP LOCKED)
                    """,
                    logger: logger
                )
            }
        } catch {
            self.logger.warning("idle token buckets not deleted", metadata: ["table": "\(self.table)", "error": "\(String(reflecting: error))"])
        }
    }
}

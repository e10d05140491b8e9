import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// The sign-in limit's token buckets, in Postgres (`sign_in_buckets`), so that every replica
/// draws on the same one: a key (a source address) gets `capacity` sign-ins at once, refilled
/// at `perSecond`, however many replicas its requests reach. A bucket that has refilled holds no
/// information: when a new key arrives, buckets idle for a full refill are deleted (a thousand
/// at a time, best effort), so the table holds about the keys seen in the last refill period
/// (a minute at the default): as many as the replicas let sign-in requests through in that time.
struct SignInBuckets: Sendable {
    let client: PostgresClient
    let capacity: Double
    let perSecond: Double
    let logger: Logger

    init(client: PostgresClient, perMinute: Int, logger: Logger) {
        self.client = client
        self.capacity = Double(perMinute)
        self.perSecond = Double(perMinute) / 60
        self.logger = logger
    }

    /// Takes one sign-in for `key`: nil if admitted, else how long until one is free.
    func take(_ key: String) async throws -> Duration? {
        let (capacity, perSecond) = (self.capacity, self.perSecond)
        // A bucket's tokens now: what it held, refilled for the time since it was last touched
        // (numbers of ours, written into the statement).
        let refilled = "LEAST(\(capacity), tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - at)::float8) * \(perSecond))"
        for _ in 0..<3 {
            // Its bucket gives a token if it holds one (the condition is checked again on the
            // row the update locks).
            let taken = try await self.client.write(
                """
                UPDATE sign_in_buckets
                SET tokens = \(unescaped: refilled) - 1,
                    at = GREATEST(at, now())
                WHERE key = \(key) AND \(unescaped: refilled) >= 1
                RETURNING 1
                """,
                logger: self.logger
            )
            if !taken.isEmpty { return nil }
            // Empty: how long until it holds a token again (if it refilled meanwhile, take again).
            let held = try await self.client.query(
                """
                SELECT \(unescaped: refilled)
                FROM sign_in_buckets WHERE key = \(key)
                """,
                logger: self.logger
            )
            var tokens: Double?
            for try await held in held.decode(Double.self) { tokens = held }
            if let tokens {
                if tokens < 1 { return .seconds((1 - tokens) / perSecond) }
                continue
            }
            // A new key: its bucket made full, less this sign-in. Another replica may make it
            // first; then the loop takes from that one.
            let made = try await self.client.write(
                """
                INSERT INTO sign_in_buckets (key, tokens, at) VALUES (\(key), \(capacity - 1), now())
                ON CONFLICT (key) DO NOTHING RETURNING 1
                """,
                logger: self.logger
            )
            if !made.isEmpty {
                await self.forgetIdle()
                return nil
            }
        }
        // Made, emptied or refilled by other replicas between this one's looks: try again soon.
        return .seconds(1 / perSecond)
    }

    /// Deletes up to a thousand buckets idle for a full refill (they hold no information),
    /// skipping any another replica holds; a failure is logged, never the sign-in's.
    private func forgetIdle() async {
        do {
            _ = try await self.client.write(
                """
                DELETE FROM sign_in_buckets WHERE key IN (
                    SELECT key FROM sign_in_buckets WHERE at < now() - make_interval(secs => \(self.capacity / self.perSecond))
                    LIMIT 1000 FOR UPDATE SKIP LOCKED)
                """,
                logger: self.logger
            )
        } catch {
            self.logger.warning("idle sign-in buckets not deleted", metadata: ["error": "\(String(reflecting: error))"])
        }
    }
}

import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// The sign-in limit's token buckets, in Postgres (`sign_in_buckets`), so that every replica
/// draws on the same one: a key (a source address) gets `capacity` sign-ins at once, refilled
/// at `perSecond`, however many replicas its requests reach. A bucket that has refilled holds no
/// information: when a new key arrives, the buckets that have been idle for a full refill are
/// deleted, so the table holds the keys of the last refill period only (each replica's
/// in-memory limiter, asked first, bounds how many new keys it brings a period).
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
        for _ in 0..<2 {
            // Its bucket, refilled for the time since it was last touched, gives a token if it holds one.
            let taken = try await self.client.write(
                """
                UPDATE sign_in_buckets
                SET tokens = LEAST(\(capacity), tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - at)::float8) * \(perSecond)) - 1,
                    at = GREATEST(at, now())
                WHERE key = \(key) AND LEAST(\(capacity), tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - at)::float8) * \(perSecond)) >= 1
                RETURNING 1
                """,
                logger: self.logger
            )
            if !taken.isEmpty { return nil }
            // Empty: how long until it holds a token again.
            let held = try await self.client.query(
                """
                SELECT LEAST(\(capacity), tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - at)::float8) * \(perSecond))
                FROM sign_in_buckets WHERE key = \(key)
                """,
                logger: self.logger
            )
            for try await tokens in held.decode(Double.self) { return .seconds(max(0, 1 - tokens) / perSecond) }
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
                _ = try await self.client.write(
                    "DELETE FROM sign_in_buckets WHERE at < now() - make_interval(secs => \(capacity / perSecond))",
                    logger: self.logger
                )
                return nil
            }
        }
        // Made and emptied by other replicas between this one's looks: as good as empty.
        return .seconds(1 / perSecond)
    }
}

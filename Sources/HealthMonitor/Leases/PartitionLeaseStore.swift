import Contracts
import Logging
import PostgresNIO
import ServiceKit

/// Health's `replicas` and `partition_leases` tables: the heartbeats of the replicas and who
/// follows each event partition until when. Times are the database's (`now()`), so replicas'
/// clocks never compare with each other.
struct PartitionLeaseStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    /// Marks `replica` seen for `ttl` and answers the replicas that count (seen within their
    /// ttl), `replica` among them. Replicas gone for a day are forgotten. One statement: its
    /// parts see the table as it was before it (hence `replica` from the upsert, and never
    /// deleted by it).
    func heartbeat(_ replica: String, ttl: Duration) async throws -> [String] {
        let seconds = Double(ttl.components.seconds)
        let rows = try await self.client.write(
            """
            WITH seen AS (
                INSERT INTO replicas (replica, seen_until) VALUES (\(replica), now() + make_interval(secs => \(seconds)))
                ON CONFLICT (replica) DO UPDATE SET seen_until = EXCLUDED.seen_until
                RETURNING replica
            ), forgotten AS (
                DELETE FROM replicas WHERE seen_until < now() - interval '1 day' AND replica <> \(replica)
            )
            SELECT replica FROM seen
            UNION ALL
            SELECT replica FROM replicas WHERE seen_until > now() AND replica <> \(replica)
            """,
            logger: self.logger
        )
        return try rows.map { try $0.decode(String.self) }
    }

    /// Takes or renews for `ttl` the leases of `partitions` that are free, expired or
    /// `replica`'s own; answers the partitions `replica` holds after (a partition another
    /// replica holds is not among them).
    func claim(_ partitions: Set<EventPartition>, for replica: String, ttl: Duration) async throws -> Set<EventPartition> {
        guard !partitions.isEmpty else { return [] }
        let rows = try await self.client.write(
            """
            INSERT INTO partition_leases (partition, holder, until)
            SELECT p, \(replica), now() + make_interval(secs => \(Double(ttl.components.seconds))) FROM unnest(\(partitions.map(\.index))::int[]) AS p
            ON CONFLICT (partition) DO UPDATE SET holder = EXCLUDED.holder, until = EXCLUDED.until
            WHERE partition_leases.holder = EXCLUDED.holder OR partition_leases.until <= now()
            RETURNING partition
            """,
            logger: self.logger
        )
        var held: Set<EventPartition> = []
        for row in rows {
            if let partition = EventPartition(Int(try row.decode(Int32.self))) { held.insert(partition) }
        }
        return held
    }

    /// Gives back `replica`'s leases of every partition but `kept`.
    func release(except kept: Set<EventPartition>, of replica: String) async throws {
        try await self.client.write(
            "DELETE FROM partition_leases WHERE holder = \(replica) AND partition <> ALL(\(kept.map(\.index))::int[])",
            logger: self.logger
        )
    }

    /// Gives back `replica`'s leases of `partitions` (all of them when nil), and with `leaving`
    /// its heartbeat: the others take them at their next round.
    func release(_ partitions: Set<EventPartition>?, of replica: String, leaving: Bool = false) async throws {
        if let partitions {
            guard !partitions.isEmpty else { return }
            try await self.client.write(
                "DELETE FROM partition_leases WHERE holder = \(replica) AND partition = ANY(\(partitions.map(\.index))::int[])",
                logger: self.logger
            )
        } else {
            try await self.client.write("DELETE FROM partition_leases WHERE holder = \(replica)", logger: self.logger)
        }
        if leaving { try await self.client.write("DELETE FROM replicas WHERE replica = \(replica)", logger: self.logger) }
    }
}

public import Foundation
public import Logging
public import PostgresNIO
import ServiceKit
public import ServiceLifecycle

/// Keeps the event log's day partitions: creates them ahead of time and drops the ones past
/// retention, without making appends wait. Runs once before the server starts (so the first
/// append has a partition) and then every ``interval``.
///
/// The event log and the ACP envelopes are partitioned by UTC day of commit. A partition is
/// dropped whole once its day is more than ``retentionDays`` days before today, so events are
/// kept at least `retentionDays` days and at most one day more. De-duplication by `msgId`
/// only reaches what is still kept.
public struct EventLogRetention: Service {
    public static let partitionedTables = ["events", "acp_envelopes"]

    let client: PostgresClient
    public let retentionDays: Int
    public var interval: Duration = .seconds(3600)
    let logger: Logger

    /// - Parameter client: sessions with ingest's schema first on the `search_path`.
    public init(client: PostgresClient, retentionDays: Int, interval: Duration = .seconds(3600), logger: Logger) {
        self.client = client
        self.retentionDays = retentionDays
        self.interval = interval
        self.logger = logger
    }

    /// What one round did.
    public struct Round: Sendable, Equatable {
        public var created: [String] = []
        public var dropped: [String] = []

        public init(created: [String] = [], dropped: [String] = []) {
            self.created = created
            self.dropped = dropped
        }
    }

    /// Creates the partitions for yesterday through two days ahead and drops those whose day
    /// is before `now` minus ``retentionDays``. A failure to create throws (appends need the
    /// partitions); a failure to drop is logged and left to the next round.
    @discardableResult
    public func maintain(now: Date = Date()) async throws -> Round {
        var round = Round()
        round.created = try await self.createPartitions(now: now)
        do {
            round.dropped = try await self.dropExpiredPartitions(now: now)
        } catch {
            self.logger.error(
                "dropping expired event log partitions failed; the next round retries",
                metadata: ["error": "\(String(reflecting: error))"]
            )
        }
        do {
            try await self.pruneFleet()
        } catch {
            self.logger.error("pruning the fleet failed; the next round retries", metadata: ["error": "\(String(reflecting: error))"])
        }
        if !round.created.isEmpty || !round.dropped.isEmpty {
            self.logger.info("event log partitions maintained", metadata: ["created": "\(round.created)", "dropped": "\(round.dropped)"])
        }
        return round
    }

    /// Forgets the fleet's minutes older than two hours (the fleet counts the last one) and
    /// agents silent for longer than the log is kept.
    private func pruneFleet() async throws {
        try await self.client.write("DELETE FROM fleet_minutes WHERE minute < now() - interval '2 hours'", logger: self.logger)
        // In batches, skipping rows an append holds (an agent coming back as it is forgotten).
        while true {
            let deleted = try await self.client.write(
                """
                DELETE FROM fleet_agents WHERE ctid IN (
                    SELECT ctid FROM fleet_agents WHERE last_seen_at < now() - make_interval(days => \(Int32(self.retentionDays)))
                    LIMIT 10000 FOR UPDATE SKIP LOCKED)
                RETURNING 1
                """,
                logger: self.logger
            )
            if deleted.count < 10_000 { break }
        }
    }

    /// One transaction per table; attaching waits for no append (see migration 3).
    private func createPartitions(now: Date) async throws -> [String] {
        let days = (-1...2).map { Self.utcDay(now.addingTimeInterval(Double($0) * 86_400)) }
        var created: [String] = []
        for table in Self.partitionedTables {
            try await self.client.withTransaction(logger: self.logger) { connection in
                try await connection.query("SET LOCAL lock_timeout = '10s'", logger: self.logger)
                for day in days {
                    let rows = try await connection.query("SELECT create_day_partition(\(table), \(day)::date)", logger: self.logger)
                    for try await made in rows.decode(Bool.self) where made {
                        created.append("\(table)_p\(day.replacingOccurrences(of: "-", with: ""))")
                    }
                }
            }
        }
        return created
    }

    /// How long a replica holds the partition drop's lease: past it, a replica that died
    /// mid-drop no longer keeps the others from dropping.
    public static let dropLease = Duration.seconds(1800)

    /// Detaches expired partitions `CONCURRENTLY` (appends and reads go on meanwhile), then drops
    /// them. One replica at a time: the one holding the lease row `maintenance_leases`
    /// (`partition-drop`), taken for ``dropLease`` and given back after; the others skip the
    /// round. A lease row, not an advisory lock: `DETACH … CONCURRENTLY` cannot run in a
    /// transaction, and a session-level lock does not survive a transaction pooler. A detach
    /// interrupted half-way is finalized on the next round.
    private func dropExpiredPartitions(now: Date) async throws -> [String] {
        let keepFrom = Self.utcDay(now.addingTimeInterval(-Double(self.retentionDays) * 86_400))
        let holder = UUID().uuidString
        let taken = try await self.client.write(
            """
            INSERT INTO maintenance_leases (name, holder, until)
            VALUES ('partition-drop', \(holder), now() + make_interval(secs => \(Double(Self.dropLease.components.seconds))))
            ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, until = EXCLUDED.until
            WHERE maintenance_leases.until < now()
            RETURNING 1
            """,
            logger: self.logger
        )
        guard !taken.isEmpty else { return [] }
        do {
            let dropped = try await self.client.withConnection { connection in
                try await self.dropExpiredPartitions(keepFrom: keepFrom, connection: connection)
            }
            try await self.giveBackDropLease(holder)
            return dropped
        } catch {
            try? await self.giveBackDropLease(holder)
            throw error
        }
    }

    private func giveBackDropLease(_ holder: String) async throws {
        try await self.client.write(
            "UPDATE maintenance_leases SET until = now() WHERE name = 'partition-drop' AND holder = \(holder)",
            logger: self.logger
        )
    }

    private func dropExpiredPartitions(keepFrom: String, connection: PostgresConnection) async throws -> [String] {
        var dropped: [String] = []
        for table in Self.partitionedTables {
            let rows = try await connection.query(
                """
                SELECT c.relname::text, i.inhdetachpending FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = \(table)::text::regclass
                  AND c.relname ~ \("^\(table)_p[0-9]{8}$")
                  AND to_date(right(c.relname, 8), 'YYYYMMDD') < \(keepFrom)::date
                ORDER BY c.relname
                """,
                logger: self.logger
            )
            var expired: [(String, Bool)] = []
            for try await (name, pending) in rows.decode((String, Bool).self) { expired.append((name, pending)) }
            for (name, pending) in expired {
                // Names are <table>_pYYYYMMDD (checked by the query), safe to splice.
                try await connection.query(
                    "ALTER TABLE \(unescaped: table) DETACH PARTITION \(unescaped: name) \(unescaped: pending ? "FINALIZE" : "CONCURRENTLY")",
                    logger: self.logger
                )
                try await connection.query("DROP TABLE \(unescaped: name)", logger: self.logger)
                dropped.append(name)
            }
        }
        return dropped
    }

    public func run() async throws {
        await repeatUntilShutdown(every: self.interval) {
            do {
                try await self.maintain()
            } catch is CancellationError {
                // shutting down
            } catch {
                self.logger.error("event log partition maintenance failed; retrying next round", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    /// `YYYY-MM-DD` of `date` in UTC.
    public static func utcDay(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let day = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", day.year!, day.month!, day.day!)
    }
}

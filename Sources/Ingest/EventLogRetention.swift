import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

/// Keeps the event log's day partitions: creates them ahead of time and drops the ones past
/// retention. Runs once before the server starts (so the first append has a partition) and
/// then every ``interval``.
///
/// The event log and the ACP envelopes are partitioned by UTC day of commit. A partition is
/// dropped whole once its day is more than ``retentionDays`` days before today, so events are
/// kept at least `retentionDays` days and at most one day more. De-duplication by `msgId`
/// only reaches what is still kept.
struct EventLogRetention: Service {
    static let partitionedTables = ["events", "acp_envelopes"]

    let client: PostgresClient
    let retentionDays: Int
    var interval: Duration = .seconds(3600)
    let logger: Logger

    /// What one round did.
    struct Round: Sendable, Equatable {
        var created: [String] = []
        var dropped: [String] = []
    }

    /// Creates the partitions for yesterday through two days ahead and drops those whose day
    /// is before `now` minus ``retentionDays``.
    @discardableResult
    func maintain(now: Date = Date()) async throws -> Round {
        let today = Self.utcDay(now)
        let keepFrom = Self.utcDay(now.addingTimeInterval(-Double(self.retentionDays) * 86_400))
        let days = (-1...2).map { Self.utcDay(now.addingTimeInterval(Double($0) * 86_400)) }
        return try await self.client.withTransaction(logger: self.logger) { connection in
            // A long append holding the parent table must not stall behind a DROP: give up
            // this round instead, the next one retries.
            try await connection.query("SET LOCAL lock_timeout = '2s'", logger: self.logger)
            var round = Round()
            for table in Self.partitionedTables {
                for day in days {
                    let rows = try await connection.query("SELECT create_day_partition(\(table), \(day)::date)", logger: self.logger)
                    for try await created in rows.decode(Bool.self) where created {
                        round.created.append("\(table)_p\(day.replacingOccurrences(of: "-", with: ""))")
                    }
                }
                let dropped = try await connection.query("SELECT drop_day_partitions_before(\(table), \(keepFrom)::date)", logger: self.logger)
                for try await name in dropped.decode(String.self) { round.dropped.append(name) }
            }
            if !round.created.isEmpty || !round.dropped.isEmpty {
                self.logger.info(
                    "event log partitions maintained",
                    metadata: ["created": "\(round.created)", "dropped": "\(round.dropped)", "today": "\(today)"]
                )
            }
            return round
        }
    }

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    try await Task.sleep(for: self.interval)
                    do {
                        try await self.maintain()
                    } catch is CancellationError {
                        throw CancellationError()
                    } catch {
                        self.logger.error("event log partition maintenance failed; retrying next round", metadata: ["error": "\(String(reflecting: error))"])
                    }
                }
            }
        } catch is CancellationError {
            return
        }
    }

    /// `YYYY-MM-DD` of `date` in UTC.
    static func utcDay(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let day = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", day.year!, day.month!, day.day!)
    }
}

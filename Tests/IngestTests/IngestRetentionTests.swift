import EventLog
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import Ingest

@Suite("Ingest event log retention (live Postgres)")
struct IngestRetentionTests {
    @Test("day partitions exist ahead of time; past retention they are dropped whole; what is kept replays and de-duplicates")
    func retention() async throws {
        let harness = try await IngestHarness(overrides: ["INGEST_RETENTION_DAYS": "3"])
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            #expect(try await harness.post(client, key: key, events: [logEvent("r1"), logEvent("r2")]).1?.accepted == 2)

            try await harness.withDatabase { database in
                let now = Date()
                func partition(_ table: String, daysFromNow: Int) -> String {
                    table + "_p"
                        + EventLogRetention.utcDay(now.addingTimeInterval(Double(daysFromNow) * 86_400)).replacingOccurrences(of: "-", with: "")
                }
                func exists(_ table: String) async throws -> Bool {
                    let rows = try await database.query("SELECT to_regclass(\(table)) IS NOT NULL")
                    for try await found in rows.decode(Bool.self) { return found }
                    return false
                }
                // The server's start made today's partitions and two days ahead.
                for table in EventLogRetention.partitionedTables {
                    #expect(try await exists(partition(table, daysFromNow: 0)))
                    #expect(try await exists(partition(table, daysFromNow: 2)))
                }

                // An event committed ten days ago, in its own day partition; and one three days ago.
                for daysAgo in [10, 3] {
                    let then = now.addingTimeInterval(Double(-daysAgo) * 86_400)
                    try await database.query("SELECT create_day_partition('events', \(EventLogRetention.utcDay(then))::date)")
                    try await database.query(
                        """
                        INSERT INTO events (tenant_id, seq, msg_id, swarm_id, agent_id, kind, severity, occurred_at, committed_at, frame)
                        VALUES (\(harness.tenant), \(-daysAgo), \("old-\(daysAgo)"), 's1', 'a1', 1, 1, \(then), \(then), '\\x7b7d')
                        """
                    )
                }

                // An agent of the fleet silent for ten days, and a minute of three hours ago.
                try await database.query(
                    """
                    INSERT INTO fleet_agents (tenant_id, agent_id, swarm_id, swarm_seq, last_seq, last_seen_at, state_changed_at)
                    VALUES (\(harness.tenant), 'gone', 's1', -10, -10, now() - interval '10 days', now() - interval '10 days')
                    """
                )
                try await database.query(
                    """
                    INSERT INTO fleet_minutes (tenant_id, agent_id, minute, events, errors)
                    VALUES (\(harness.tenant), 'a1', date_trunc('minute', now() - interval '3 hours'), 5, 0)
                    """
                )

                let retention = EventLogRetention(client: database, retentionDays: 3, logger: Logger(label: "test"))
                // Another replica holds the drop's lease: this round drops nothing; once the
                // lease has lapsed, it drops.
                // (The server's start took it once already, and gave it back.)
                try await database.query(
                    """
                    INSERT INTO maintenance_leases (name, holder, until) VALUES ('partition-drop', 'another replica', now() + interval '1 hour')
                    ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, until = EXCLUDED.until
                    """
                )
                #expect(try await retention.maintain(now: now) == EventLogRetention.Round())
                try await database.query("UPDATE maintenance_leases SET until = now() - interval '1 second'")
                let round = try await retention.maintain(now: now)
                #expect(round.created == [])
                #expect(round.dropped == [partition("events", daysFromNow: -10)])
                // Given back after the round.
                let lapsed = try await database.query("SELECT until <= now() FROM maintenance_leases WHERE name = 'partition-drop'")
                for try await given in lapsed.decode(Bool.self) { #expect(given) }
                #expect(try await retention.maintain(now: now) == EventLogRetention.Round())

                let rows = try await database.query("SELECT seq FROM events WHERE tenant_id = \(harness.tenant) ORDER BY seq")
                var seqs: [Int64] = []
                for try await seq in rows.decode(Int64.self) { seqs.append(seq) }
                #expect(seqs == [-3, 1, 2])

                // The fleet forgot the agent silent past the retention and the minute past two
                // hours; the live agent and its minute of now stay.
                let fleet = try await database.query(
                    """
                    SELECT a.agent_id, (SELECT sum(events) FROM fleet_minutes m WHERE m.tenant_id = a.tenant_id AND m.agent_id = a.agent_id)::int8
                    FROM fleet_agents a WHERE a.tenant_id = \(harness.tenant) ORDER BY 1
                    """
                )
                var agents: [String] = []
                for try await (agent, events) in fleet.decode((String, Int64?).self) { agents.append("\(agent) \(events ?? 0)") }
                #expect(agents == ["a1 2"], "the fleet after the round: \(agents)")
            }

            // What is kept still de-duplicates, and new events continue the seqs.
            let again = try await harness.post(client, key: key, events: [logEvent("r2"), logEvent("r3")])
            #expect(again.1?.results.map(\.status) == ["duplicate", "accepted"])
            #expect(again.1?.results.map(\.seq) == [2, 3])
        }
    }

    @Test("dropping an expired partition while a long reader holds the log does not hold up appends")
    func dropDoesNotBlockAppends() async throws {
        // Appends must not wait for the detach: with the 2 s commit deadline, one queued behind
        // an ACCESS EXCLUSIVE lock for the reader's 3 s would get 503.
        let harness = try await IngestHarness(overrides: ["INGEST_COMMIT_TIMEOUT_SECONDS": "2"])
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            // Something in the log first (retried: a busy machine may miss the first deadline).
            #expect(try await eventually { try await harness.post(client, key: key, events: [logEvent("x1")]).0 == .ok })
            try await harness.withDatabase { database in
                let old = EventLogRetention.utcDay(Date().addingTimeInterval(-20 * 86_400))
                try await database.query("SELECT create_day_partition('events', \(old)::date)")
                let retention = EventLogRetention(client: database, retentionDays: 3, logger: Logger(label: "test"))
                let logger = Logger(label: "test")
                try await database.withTransaction(logger: logger) { reader in
                    // A long reader: its snapshot keeps the partition in use.
                    try await reader.query("SELECT count(*) FROM events", logger: logger)
                    async let round = retention.maintain()
                    // While the detach waits for the reader, appends go on.
                    for index in 0..<8 {
                        try await Task.sleep(for: .milliseconds(400))
                        #expect(try await harness.post(client, key: key, events: [logEvent("during-\(index)")]).0 == .ok)
                    }
                    _ = try await reader.query("COMMIT", logger: logger)
                    _ = try await reader.query("BEGIN", logger: logger)
                    #expect(try await round.dropped == ["events_p" + old.replacingOccurrences(of: "-", with: "")])
                }
            }
        }
    }

    @Test("migrating an unpartitioned log (version 2) keeps every event and envelope, in their day partitions")
    func upgradeFromVersion2() async throws {
        let harness = try await IngestHarness()
        try await harness.withDatabase { database in
            let logger = Logger(label: "test")
            try await Migrator(schema: harness.schema, migrations: Array(EventLogMigrations.all.prefix(2))).migrate(database, logger: logger)
            let yesterday = Date().addingTimeInterval(-86_400)
            try await database.query(
                """
                INSERT INTO \(unescaped: harness.schema).events (tenant_id, seq, msg_id, swarm_id, agent_id, kind, severity, occurred_at, committed_at, frame)
                SELECT 't', n, 'm' || n, 's', 'a', 1, 1, now(), CASE WHEN n % 2 = 0 THEN now() ELSE \(yesterday) END, '\\x7b7d'
                FROM generate_series(1, 100) AS n
                """
            )
            try await database.query(
                """
                INSERT INTO \(unescaped: harness.schema).acp_envelopes (tenant_id, thread_id, thread_seq, seq, direction, kind, msg_id, checksum, received_at, body)
                VALUES ('t', 'th', 1, 7, 1, 1, 'x', '\\x00', now(), '\\x7b7d')
                """
            )
            #expect(
                try await Migrator(schema: harness.schema, migrations: EventLogMigrations.all).migrate(database, logger: logger) == [
                    3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                ]
            )
            // Migration 12 noted the log's agents in the fleet: the latest event's seq and swarm.
            let fleet = try await database.query(
                "SELECT agent_id, swarm_id, last_seq FROM \(unescaped: harness.schema).fleet_agents WHERE tenant_id = 't'"
            )
            var agents: [String] = []
            for try await (agent, swarm, seq) in fleet.decode((String, String, Int64).self) { agents.append("\(agent) \(swarm) \(seq)") }
            #expect(agents == ["a s 100"])
            let counts = try await database.query(
                """
                SELECT (SELECT count(*) FROM \(unescaped: harness.schema).events)::int,
                       (SELECT count(DISTINCT tableoid) FROM \(unescaped: harness.schema).events)::int,
                       (SELECT count(*) FROM \(unescaped: harness.schema).acp_envelopes WHERE seq = 7)::int
                """
            )
            for try await (events, partitions, envelopes) in counts.decode((Int, Int, Int).self) {
                #expect(events == 100)
                #expect(partitions == 2)
                #expect(envelopes == 1)
            }
        }
    }
}

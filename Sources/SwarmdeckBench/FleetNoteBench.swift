import ArgumentParser
import Contracts
import EventLog
import Foundation
import Logging
import NIOCore
import PostgresNIO
import ServiceKit

/// `swarmdeck-bench fleet-note`: what keeping the fleet in the append's transaction costs the
/// event log. Two scratch schemas side by side in one database: one migrated up to event log
/// migration 11 (`append_events` as it was), one to the latest (`append_events` that also runs
/// `fleet_note`); the same groups of events appended to each, one transaction per group as
/// ingest commits them, in ABBA order; prints each side's rows per second and their ratio.
struct FleetNoteBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet-note",
        abstract: "Appends with and without the fleet kept in their transaction, side by side (ABBA), in scratch schemas."
    )

    @Option(help: "Postgres URL, as a role that may create schemas (default: $SWARMDECK_DATABASE_URL).")
    var databaseURL: String?

    @Option(help: "Events per transaction (ingest's ingest.write-batch-events).")
    var rows = 2000

    @Option(help: "Transactions per phase (four phases: ABBA).")
    var transactions = 50

    @Option(help: "Agents the events are dealt to.")
    var agents = 50

    @Option(help: "One event in this many is a state event (parsed for the fleet).")
    var stateEvery = 10

    func run() async throws {
        guard let databaseURL = self.databaseURL ?? ProcessInfo.processInfo.environment["SWARMDECK_DATABASE_URL"] else {
            throw ValidationError("no database URL: pass --database-url or source .swarmdeck/local.env")
        }
        guard self.rows > 0, self.transactions > 0, self.agents > 0, self.stateEvery > 0 else {
            throw ValidationError("rows, transactions, agents and state-every must be positive")
        }
        let logger = Logger(label: "fleet-note-bench")
        let suffix = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let before = "bench_fleet_a_" + suffix
        let after = "bench_fleet_b_" + suffix
        var clients: [PostgresClient] = []
        for schema in [before, after] {
            var configuration = try PostgresClient.Configuration(url: databaseURL, maxConnections: 1)
            configuration.options.additionalStartupParameters = [("search_path", schema), ("statement_timeout", "0")]
            clients.append(PostgresClient(configuration: configuration))
        }
        let fixed = clients
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in fixed { group.addTask { await client.run() } }
            defer { group.cancelAll() }
            do {
                try await self.measure(before: (before, fixed[0]), after: (after, fixed[1]), logger: logger)
            } catch {
                try? await self.drop([before, after], client: fixed[0], logger: logger)
                throw error
            }
            try await self.drop([before, after], client: fixed[0], logger: logger)
        }
    }

    private func drop(_ schemas: [String], client: PostgresClient, logger: Logger) async throws {
        for schema in schemas {
            try await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(schema) CASCADE"), logger: logger)
        }
        print("scratch schemas dropped")
    }

    private func measure(before: (String, PostgresClient), after: (String, PostgresClient), logger: Logger) async throws {
        let all = EventLogMigrations.all
        guard let twelve = all.firstIndex(where: { $0.version == 12 }) else { throw ValidationError("no event log migration 12") }
        try await Migrator(schema: before.0, migrations: Array(all[..<twelve])).migrate(before.1, logger: logger)
        try await Migrator(schema: after.0, migrations: all).migrate(after.1, logger: logger)
        for (_, client) in [before, after] {
            _ = try await EventLogRetention(client: client, retentionDays: 7, logger: logger).maintain()
            try await client.write("INSERT INTO tenants (tenant_id) VALUES ('bench')", logger: logger)
        }
        print(
            "fleet-note bench: \(self.rows) events a transaction (one in \(self.stateEvery) a state event) over \(self.agents) agents, "
                + "\(self.transactions) transactions a phase, ABBA; A = append_events before migration 12, B = with fleet_note"
        )
        var rates: [String: [Double]] = ["A": [], "B": []]
        var next = 0
        for phase in ["A", "B", "B", "A"] {
            let client = phase == "A" ? before.1 : after.1
            let start = ContinuousClock.now
            for _ in 0..<self.transactions {
                try await self.append(group: next, fleet: phase == "B", client: client, logger: logger)
                next += 1
            }
            let seconds = (ContinuousClock.now - start).secondsDouble
            let rate = Double(self.rows * self.transactions) / seconds
            rates[phase, default: []].append(rate)
            print(String(format: "  %@  %9.0f rows/s  (%.2f s)", phase, rate, seconds))
        }
        let a = rates["A"]!.reduce(0, +) / 2
        let b = rates["B"]!.reduce(0, +) / 2
        print(String(format: "A %.0f rows/s, B %.0f rows/s: B/A %.3f (the fleet costs %.1f%% of the append's rate)", a, b, b / a, (1 - b / a) * 100))
    }

    /// One group of `rows` events appended in one transaction, as ingest appends it: group
    /// `number`'s msgIds are its own.
    private func append(group number: Int, fleet: Bool, client: PostgresClient, logger: Logger) async throws {
        var msgIDs: [String] = []
        var swarms: [String] = []
        var agents: [String] = []
        var kinds: [Int16] = []
        var severities: [Int16] = []
        var occurred: [Int64] = []
        var tails: [ByteBuffer] = []
        var states: [String] = []
        var summaries: [String] = []
        var workers: [Bool] = []
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for index in 0..<self.rows {
            let agentNumber = (number * self.rows + index) % self.agents
            let agent = "agent-\(agentNumber)"
            let state = index % self.stateEvery == 0
            msgIDs.append("g\(number)-\(index)")
            swarms.append("swarm-\(agentNumber % 4)")
            agents.append(agent)
            kinds.append(Int16((state ? BusEventKind.state : BusEventKind.log).rawValue))
            severities.append(Int16((index % 20 == 0 ? BusSeverity.error : BusSeverity.info).rawValue))
            occurred.append(now)
            let tail =
                state
                ? #","type":"state","ts":\#(now),"swarmId":"s","agentId":"\#(agent)","state":"running","taskSummary":"refactoring the parser"}"#
                : #","type":"log","ts":\#(now),"swarmId":"s","agentId":"\#(agent)","severity":"info","level":"info","message":"compiled 42 files in 3.1 s"}"#
            tails.append(ByteBuffer(string: tail))
            states.append(state ? "running" : "")
            summaries.append(state ? "refactoring the parser" : "")
            workers.append(false)
        }
        var binds = PostgresBindings(capacity: 15)
        binds.append("bench")
        binds.append(Int64(now))
        binds.append(Int64(86_400_000))
        binds.append(msgIDs)
        binds.append(swarms)
        binds.append(agents)
        binds.append(kinds)
        binds.append(severities)
        binds.append(occurred)
        binds.append(tails)
        var sql = "SELECT seqs, duplicates FROM append_events($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        if fleet {
            // The state events' fields, sparse, as ingest binds them (EventLog's FleetNote.States).
            let positions = states.indices.filter { !states[$0].isEmpty }
            binds.append(positions.map { Int32($0 + 1) })
            binds.append(positions.map { states[$0] })
            binds.append(positions.map { summaries[$0] })
            binds.append(positions.map { workers[$0] })
            binds.append(positions.map { _ in "" })
            binds.append(positions.map { _ in "" })
            sql = "SELECT seqs, duplicates FROM append_events($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
        }
        let statement = PostgresQuery(unsafeSQL: sql, binds: binds)
        try await client.withTransaction(logger: logger) { connection in
            _ = try await connection.query(statement, logger: logger).collect()
        }
    }
}

import ArgumentParser
import EventLog
import Foundation
import Logging
import NIOCore
import PostgresNIO
import ServiceKit
import SwarmdeckTools

/// `swarmdeck bench ingest`: ingest's sustained rate and the CPU each process of the stack spent
/// per event, beside a raw `COPY` of the same rows into a table made like the event log (for one
/// tenant and for several), and its acknowledgement latency at half that rate, in one run.
struct IngestBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Ingest at full load, at half load, and raw COPY of as many rows into a copy of the events table, side by side."
    )

    @OptionGroup var target: IngestTargetOptions

    @Option(help: "Postgres URL of ingest's database (default: $SWARMDECK_DATABASE_URL).")
    var databaseURL: String?

    @Option(help: "Ingest's schema.")
    var schema = "ingest"

    @Option(name: .customLong("protocol"), help: "What to send: \(IngestProtocol.allCases.map(\.rawValue).joined(separator: ", ")).")
    var protocolName: IngestProtocol = .native

    @Option(help: "Items per request.")
    var batch = 1000

    @Option(help: "Events per request in the half-load phase (smaller batches, lower latency).")
    var latencyBatch = 100

    @Option(help: "Seconds per load phase.")
    var duration: Double = 10

    @Option(help: "The ingest key's tenant (whose rows the COPY copies).")
    var tenant = "dev"

    @Option(help: "Tenant counts the COPY deals the rows to, comma-separated.")
    var copyTenants = "1,4"

    @Option(help: "Rows per transaction when INSERT … unnest and text COPY are compared (ingest's ingest.write-batch-events).")
    var transactionRows = 2000

    @Option(
        help:
            "Ingest keys of other tenants, comma-separated (default: $SWARMDECK_TENANT_KEYS): a third phase loads them with --key at once, the connections dealt round the tenants."
    )
    var tenantKeys: String?

    @Option(help: "ingest's /metrics, for the size of its transactions in each phase (the local stack's ingest port).")
    var metricsURL = "http://127.0.0.1:9101/metrics"

    @Option(help: "ingest's pid, for its rate setting and CPU (default: .swarmdeck/run/ingest.pid).")
    var ingestPid: Int32?

    func run() async throws {
        let key = try self.target.ingestKey()
        guard let databaseURL = self.databaseURL ?? ProcessInfo.processInfo.environment["SWARMDECK_DATABASE_URL"] else {
            throw ValidationError("no database URL: pass --database-url or source .swarmdeck/local.env")
        }
        guard self.schema.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { throw ValidationError("bad schema name") }

        let target = self.target
        print(
            "ingest bench (\(self.protocolName.rawValue)): \(target.connections) connections, batch \(self.batch), \(self.duration) s per phase, \(target.url)"
        )
        let ingestPID = self.ingestPid ?? FanoutBench.pidFile("ingest")
        print(Self.tenantRate(ofProcess: ingestPID))
        let processes: [(String, [Int32])] = [
            ("ingest", ingestPID > 0 ? [ingestPID] : ProcessCPU.servicePIDs("ingest")),
            ("postgres", ProcessCPU.pids(named: "postgres")),
            ("nats-server", ProcessCPU.pids(named: "nats-server")),
            ("stream-fanout", ProcessCPU.servicePIDs("stream-fanout")),
            ("health-monitor", ProcessCPU.servicePIDs("health-monitor")),
            ("control-api", ProcessCPU.servicePIDs("control-api")),
            ("nginx", ProcessCPU.pids(named: "nginx")),
            ("this bench", [getpid()]),
        ]
        func load(_ keys: [String], batch: Int, rate: Double) async throws -> IngestLoad.Report {
            try await IngestLoad(
                url: target.url,
                protocolName: self.protocolName,
                keys: keys,
                connections: max(target.connections, keys.count),
                batch: batch,
                rate: rate,
                duration: .seconds(self.duration)
            ).run()
        }
        func printCPU(_ title: String, since before: ProcessCPU.Sample, accepted: Int) {
            let cpu = ProcessCPU.Sample(processes).since(before, order: processes.map(\.0))
            print(
                "CPU per accepted event at \(title): "
                    + cpu.map { String(format: "%@ %.1f µs", $0.0, $0.1 / Double(max(accepted, 1)) * 1e6) }.joined(separator: ", ")
            )
        }
        let cpuBefore = ProcessCPU.Sample(processes)
        let transactionsBefore = await IngestTransactions.read(self.metricsURL)
        let full = try await load([key], batch: self.batch, rate: 0)
        print(full.printed(title: "full load"))
        let transactionsAtFull = await IngestTransactions.read(self.metricsURL)
        print(IngestTransactions.describe(from: transactionsBefore, to: transactionsAtFull))
        printCPU("full load", since: cpuBefore, accepted: full.accepted)
        let halfRate = full.eventsPerSecond / 2
        let half = try await load([key], batch: self.latencyBatch, rate: halfRate)
        print(half.printed(title: String(format: "half load (%.0f events/s target, batch %d)", halfRate, self.latencyBatch)))
        print(IngestTransactions.describe(from: transactionsAtFull, to: await IngestTransactions.read(self.metricsURL)))

        // Several tenants at once: each commits under its own row lock, in parallel.
        let others = (self.tenantKeys ?? ProcessInfo.processInfo.environment["SWARMDECK_TENANT_KEYS"] ?? "")
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && $0 != key }
        if !others.isEmpty {
            let keys = [key] + others
            let cpuBeforeTenants = ProcessCPU.Sample(processes)
            let transactionsBeforeTenants = await IngestTransactions.read(self.metricsURL)
            let tenants = try await load(keys, batch: self.batch, rate: 0)
            print(tenants.printed(title: "full load, \(keys.count) tenants"))
            print(IngestTransactions.describe(from: transactionsBeforeTenants, to: await IngestTransactions.read(self.metricsURL)))
            printCPU("full load, \(keys.count) tenants", since: cpuBeforeTenants, accepted: tenants.accepted)
        }

        let runs: [EventLogCopyBaseline.Run]
        let inserts: [EventLogCopyBaseline.InsertRun]
        do {
            (runs, inserts) = try await self.copyRuns(rows: min(max(full.accepted, 10_000), 500_000), databaseURL: databaseURL)
        } catch {
            throw ValidationError("COPY failed: \(String(reflecting: error))")
        }
        guard !runs.isEmpty else { throw ValidationError("tenant \(self.tenant) has no rows in \(self.schema).events to copy (--tenant)") }
        for run in runs {
            print(
                String(
                    format:
                        "raw COPY, %d tenant(s): %.0f rows/s (the last %d rows ingest stored, into a table made like %@.events: partitioned by day, its indexes); ratio ingest/COPY %.2f",
                    run.tenants,
                    run.rowsPerSecond,
                    run.rows,
                    self.schema,
                    full.eventsPerSecond / run.rowsPerSecond
                )
            )
        }
        // Each method ran twice, in ABBA order: their runs' rows over their runs' seconds.
        func rate(_ method: EventLogCopyBaseline.InsertMethod) -> (rowsPerSecond: Double, making: Double, runs: Int)? {
            let runs = inserts.filter { $0.method == method }
            let seconds = runs.reduce(0) { $0 + $1.seconds }
            guard !runs.isEmpty, seconds > 0 else { return nil }
            return (Double(runs.reduce(0) { $0 + $1.rows }) / seconds, runs.reduce(0) { $0 + $1.makingSeconds } / seconds, runs.count)
        }
        if let unnest = rate(.unnest), let copy = rate(.textCopy) {
            print(
                String(
                    format:
                        "the same rows in transactions of %d, %d runs each (ABBA), making each one's data included: INSERT … unnest %.0f rows/s (making the data %.0f%% of it), text COPY %.0f rows/s (%.0f%%); COPY/unnest %.2f",
                    self.transactionRows,
                    unnest.runs,
                    unnest.rowsPerSecond,
                    unnest.making * 100,
                    copy.rowsPerSecond,
                    copy.making * 100,
                    copy.rowsPerSecond / unnest.rowsPerSecond
                )
            )
        }
    }

    /// The tenant rate ingest runs with, read from its environment (its configuration's
    /// `ingest.tenant-events-per-second`): a run at that rate measures the limiter.
    static func tenantRate(ofProcess pid: Int32) -> String {
        guard pid > 0, let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else {
            return "tenant rate: unknown (ingest's environment cannot be read; set INGEST_TENANT_EVENTS_PER_SECOND high for a load test)"
        }
        let variables = environ.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        func value(_ name: String) -> String? {
            variables.first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        let rate = value("INGEST_TENANT_EVENTS_PER_SECOND")
        let burst = value("INGEST_TENANT_EVENTS_BURST")
        guard let rate else {
            return
                "tenant rate: the default (2000 events/s): this run measures the limiter, not ingest (INGEST_TENANT_EVENTS_PER_SECOND=1000000 deploy/local/stack up)"
        }
        return "tenant rate: \(rate) events/s, burst \(burst ?? "the default") (INGEST_TENANT_EVENTS_PER_SECOND, INGEST_TENANT_EVENTS_BURST)"
    }

    /// `COPY … FROM STDIN` of the rows ingest just stored, dealt to each of ``copyTenants``;
    /// then the same rows inserted per transaction by each of ingest's possible methods.
    private func copyRuns(
        rows: Int,
        databaseURL: String
    ) async throws -> ([EventLogCopyBaseline.Run], [EventLogCopyBaseline.InsertRun]) {
        let client = PostgresClient(configuration: try PostgresClient.Configuration(url: databaseURL, maxConnections: 2))
        let tenants = self.copyTenants.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        return try await withThrowingTaskGroup(of: ([EventLogCopyBaseline.Run], [EventLogCopyBaseline.InsertRun])?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            let logger = Logger(label: "bench")
            let runs = try await EventLogCopyBaseline.run(
                client: client,
                schema: self.schema,
                sourceTenant: self.tenant,
                rows: rows,
                tenants: tenants,
                logger: logger
            )
            let inserts = try await EventLogCopyBaseline.compareInserts(
                client: client,
                schema: self.schema,
                sourceTenant: self.tenant,
                rows: rows,
                transactionRows: self.transactionRows,
                logger: logger
            )
            return (runs, inserts)
        }
    }
}

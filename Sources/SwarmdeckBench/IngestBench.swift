import ArgumentParser
import EventLog
import Foundation
import Logging
import NIOCore
import PostgresNIO
import ServiceKit
import SwarmdeckTools

/// `swarmdeck bench ingest`: ingest's sustained rate beside a raw `COPY` of the same rows, and
/// its acknowledgement latency at half that rate, in one run.
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
        let full = try await IngestLoad(
            url: target.url,
            protocolName: self.protocolName,
            key: key,
            connections: target.connections,
            batch: self.batch,
            rate: 0,
            duration: .seconds(self.duration)
        ).run()
        print(full.printed(title: "full load"))
        let halfRate = full.eventsPerSecond / 2
        let half = try await IngestLoad(
            url: target.url,
            protocolName: self.protocolName,
            key: key,
            connections: target.connections,
            batch: self.latencyBatch,
            rate: halfRate,
            duration: .seconds(self.duration)
        ).run()
        print(half.printed(title: String(format: "half load (%.0f events/s target, batch %d)", halfRate, self.latencyBatch)))

        let rows = max(full.accepted, 10_000)
        let copyRate: Double
        do {
            copyRate = try await self.copyRate(rows: rows, databaseURL: databaseURL)
        } catch {
            throw ValidationError("COPY failed: \(String(reflecting: error))")
        }
        print(String(format: "raw COPY: %.0f rows/s (%d rows into a copy of %@.events with its indexes)", copyRate, rows, self.schema))
        print(String(format: "ratio ingest/COPY: %.2f", full.eventsPerSecond / copyRate))
    }

    /// Rows per second of `COPY … FROM STDIN` of `rows` rows shaped like ingest's.
    private func copyRate(rows: Int, databaseURL: String) async throws -> Double {
        let client = PostgresClient(configuration: try PostgresClient.Configuration(url: databaseURL, maxConnections: 2))
        return try await withThrowingTaskGroup(of: Double?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await EventLogCopyBaseline.rowsPerSecond(client: client, schema: self.schema, rows: rows, logger: Logger(label: "bench"))
        }
    }
}

import ArgumentParser
import SwarmdeckTools

/// `swarmdeck loadgen ingest`: load against a running ingest.
struct LoadgenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "loadgen",
        abstract: "Load generators (only against servers of your own, on this machine).",
        subcommands: [Ingest.self]
    )

    struct Ingest: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ingest",
            abstract: "Post batches to ingest (native JSON or OTLP protobuf); prints events/s accepted, p50/p99 acknowledgement latency and errors."
        )

        @Option(name: .customLong("protocol"), help: "What to send: \(IngestProtocol.allCases.map(\.rawValue).joined(separator: ", ")).")
        var protocolName: IngestProtocol = .native

        @OptionGroup var target: IngestTargetOptions

        @Option(help: "Items per request: events, log records or spans.")
        var batch = 500

        @Option(help: "Target events/s in total; 0 = as fast as possible.")
        var rate: Double = 0

        @Option(help: "Seconds to run.")
        var duration: Double = 10

        func validate() throws {
            guard (1...100_000).contains(self.batch), self.rate >= 0, (0.1...3600).contains(self.duration) else {
                throw ValidationError("batch 1…100000, rate ≥ 0, duration 0.1…3600 s")
            }
        }

        func run() async throws {
            let load = IngestLoad(
                url: self.target.url,
                protocolName: self.protocolName,
                key: try self.target.ingestKey(),
                connections: self.target.connections,
                batch: self.batch,
                rate: self.rate,
                duration: .seconds(self.duration)
            )
            print(
                try await load.run().printed(
                    title: "ingest load (\(self.protocolName.rawValue), \(self.target.connections) connections, batch \(self.batch))"
                )
            )
        }
    }
}

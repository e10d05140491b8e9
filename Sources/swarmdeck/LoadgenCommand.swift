import ArgumentParser

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
            abstract: "Post native batches to ingest; prints events/s accepted, p50/p99 acknowledgement latency and errors."
        )

        @Option(help: "Base URL of ingest or the edge.")
        var url = "http://127.0.0.1:8080"

        @Option(help: "Ingest key (default: $SWARMDECK_INGEST_KEY).")
        var key: String?

        @Option(help: "Concurrent connections.")
        var connections = 8

        @Option(help: "Events per request.")
        var batch = 500

        @Option(help: "Target events/s in total; 0 = as fast as possible.")
        var rate: Double = 0

        @Option(help: "Seconds to run.")
        var duration: Double = 10

        func validate() throws {
            guard (1...1024).contains(self.connections), (1...100_000).contains(self.batch), self.rate >= 0, (0.1...3600).contains(self.duration) else {
                throw ValidationError("connections 1…1024, batch 1…100000, rate ≥ 0, duration 0.1…3600 s")
            }
        }

        func run() async throws {
            let key = try resolveIngestKey(self.key)
            let load = IngestLoad(url: self.url, key: key, connections: self.connections, batch: self.batch, rate: self.rate, duration: .seconds(self.duration))
            print(try await load.run().printed(title: "ingest load (\(self.connections) connections, batch \(self.batch))"))
        }
    }
}

func resolveIngestKey(_ key: String?) throws -> String {
    if let key { return key }
    if let key = ProcessInfo.processInfo.environment["SWARMDECK_INGEST_KEY"], !key.isEmpty { return key }
    throw ValidationError("no ingest key: pass --key or source .swarmdeck/local.env")
}

import Foundation

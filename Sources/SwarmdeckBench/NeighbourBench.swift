import ArgumentParser
import Foundation
import ServiceKit
import SwarmdeckTools

/// `swarmdeck-bench neighbours`: what one tenant flooding ingest does to another's latency.
/// The quiet tenant posts at a steady low rate alone, then again while the loud tenant posts
/// as fast as it can; its acknowledgement p99 under the flood is printed beside its idle p99
/// (target: at most 2×), with what the loud tenant got through and how often it was refused.
struct NeighbourBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "neighbours",
        abstract: "A quiet tenant's ingest latency alone and while another tenant floods ingest, side by side."
    )

    @OptionGroup var target: IngestTargetOptions

    @Option(help: "The quiet tenant's ingest key (another tenant's than --key; default: $SWARMDECK_QUIET_INGEST_KEY).")
    var quietKey: String?

    @Option(help: "The quiet tenant's events per second.")
    var quietRate: Double = 200

    @Option(help: "Events per request of the quiet tenant.")
    var quietBatch = 10

    @Option(help: "Events per request of the loud tenant.")
    var loudBatch = 1000

    @Option(help: "Seconds per phase.")
    var duration: Double = 10

    func validate() throws {
        guard self.quietRate > 0, (1...10_000).contains(self.quietBatch), (1...10_000).contains(self.loudBatch), self.duration >= 1 else {
            throw ValidationError("--quiet-rate > 0, --quiet-batch and --loud-batch 1…10000, --duration ≥ 1")
        }
    }

    func run() async throws {
        let loudKey = try self.target.ingestKey()
        guard let quietKey = self.quietKey ?? ProcessInfo.processInfo.environment["SWARMDECK_QUIET_INGEST_KEY"], !quietKey.isEmpty else {
            throw ValidationError("no quiet key: pass --quiet-key (a key of another tenant; `swarmdeck tenant create` makes one)")
        }
        guard quietKey != loudKey else { throw ValidationError("--quiet-key must be another tenant's key than --key") }
        let duration = Duration.milliseconds(Int(self.duration * 1000))
        let quiet = IngestLoad(url: self.target.url, key: quietKey, connections: 2, batch: self.quietBatch, rate: self.quietRate, duration: duration)
        let loud = IngestLoad(
            url: self.target.url,
            key: loudKey,
            connections: self.target.connections,
            batch: self.loudBatch,
            rate: 0,
            duration: duration
        )
        print(
            "neighbours bench: quiet tenant \(self.quietRate) events/s in batches of \(self.quietBatch); loud tenant \(self.target.connections) connections, batches of \(self.loudBatch); \(self.duration) s per phase, \(self.target.url)"
        )
        let idle = try await quiet.run()
        print(idle.printed(title: "quiet alone"))
        async let flood = loud.run()
        let loaded = try await quiet.run()
        let flooded = try await flood
        print(loaded.printed(title: "quiet during the flood"))
        print(flooded.printed(title: "loud (the flood)"))
        let ratio = loaded.percentile(0.99).millisecondsDouble / max(idle.percentile(0.99).millisecondsDouble, 0.001)
        print(String(format: "ratio quiet p99 flooded/idle: %.2f (target ≤ 2)", ratio))
    }
}

import ArgumentParser
import AsyncHTTPClient
import Foundation
import ServiceKit
import SwarmdeckTools
import TelemetryRelay

/// `swarmdeck-bench relay`: the connector's telemetry relay in front of a running ingest, side by
/// side with ingest alone: the answer latency an exporter sees (at the same fixed rate), and
/// how many events a second one relay carries through to ingest at full load.
struct RelayBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "OTLP logs exports through one telemetry relay and straight to ingest, side by side: latency and throughput."
    )

    @OptionGroup var target: IngestTargetOptions

    @Option(help: "Log records per export.")
    var batch = 100

    @Option(help: "Exports a second in the latency phases (each sent to ingest, then to the relay).")
    var exportsPerSecond = 100.0

    @Option(help: "Seconds per phase.")
    var duration: Double = 10

    func run() async throws {
        let key = try self.target.ingestKey()
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var limits = RelayLimits()
        // The bench measures what one relay can carry, not its default rate.
        limits.itemsPerSecond = 10_000_000
        limits.burstItems = 10_000_000
        limits.drainTime = .seconds(30)
        let relay = try await TelemetryRelay.start(
            ingestURL: self.target.url,
            key: key,
            stamp: RelayStamp(swarm: "bench", agent: "relay-bench"),
            limits: limits,
            client: client
        )
        print(
            "relay bench: exports of \(self.batch) log records, \(self.target.connections) connections, \(self.duration) s per phase; ingest \(self.target.url), relay \(relay.endpoint)"
        )
        func load(_ url: String, _ credential: String, rate: Double) -> IngestLoad {
            IngestLoad(
                url: url,
                protocolName: .otlpLogs,
                key: credential,
                connections: self.target.connections,
                batch: self.batch,
                rate: rate,
                duration: .seconds(self.duration)
            )
        }
        let rate = self.exportsPerSecond * Double(self.batch)
        let direct = try await load(self.target.url, key, rate: rate).run()
        print(direct.printed(title: String(format: "ingest alone, %.0f events/s", rate)))
        let relayed = try await load(relay.endpoint, relay.secret, rate: rate).run()
        print(relayed.printed(title: String(format: "through the relay, %.0f events/s (the relay's answer)", rate)))
        print(
            String(
                format: "added by the relay at p50/p99: %.3f / %.3f ms (its answers; ingest's own: %.3f / %.3f ms)",
                relayed.percentile(0.5).millisecondsDouble,
                relayed.percentile(0.99).millisecondsDouble,
                direct.percentile(0.5).millisecondsDouble,
                direct.percentile(0.99).millisecondsDouble
            )
        )
        _ = await Self.drained(relay)

        // Full load: what the command can hand the relay, and what reaches ingest.
        let before = relay.statistics.forwardedItems
        let clock = ContinuousClock()
        let started = clock.now
        let full = try await load(relay.endpoint, relay.secret, rate: 0).run()
        print(full.printed(title: "through the relay, full load (the relay's answers)"))
        let drained = await Self.drained(relay)
        let elapsed = clock.now - started
        let carried = Double(relay.statistics.forwardedItems - before) / elapsed.secondsDouble
        print(
            String(
                format: "carried to ingest: %.0f events/s (%d events in %.1f s, until the queue drained%@)",
                carried,
                relay.statistics.forwardedItems - before,
                elapsed.secondsDouble,
                drained ? "" : "; it had not drained after 60 s"
            )
        )
        await relay.close()
        let statistics = relay.statistics
        print(
            "relay totals: \(statistics.acceptedItems) taken, \(statistics.forwardedItems) forwarded, \(statistics.fullRefusedExports) exports refused with the queue full, \(statistics.droppedItems) dropped"
        )
        try await client.shutdown()
    }

    /// Waits (up to 60 s) until the relay's queue is empty.
    static func drained(_ relay: TelemetryRelay) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if relay.statistics.queuedItems == 0 { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }
}

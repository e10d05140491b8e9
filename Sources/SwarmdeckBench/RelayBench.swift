import ArgumentParser
import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
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
        let stamp = RelayStamp(swarm: "bench", agent: "relay-bench")
        let relay = try await TelemetryRelay.start(ingestURL: self.target.url, key: key, stamp: stamp, limits: limits, client: client)
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
                format: "the relay's answers against ingest's at p50/p99: %.3f / %.3f ms against %.3f / %.3f ms",
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

        // The relay's own cost: the same, forwarding to a sink that answers 200 at once, so that
        // ingest's work does not share the cores.
        let sink = try await Self.sink()
        let alone = try await TelemetryRelay.start(ingestURL: sink.url, key: "sink", stamp: stamp, limits: limits, client: client)
        let bare = try await load(sink.url, "sink", rate: rate).run()
        print(bare.printed(title: String(format: "the sink alone, %.0f events/s", rate)))
        let paced = try await load(alone.endpoint, alone.secret, rate: rate).run()
        print(paced.printed(title: String(format: "through the relay to the sink, %.0f events/s (the relay's answers)", rate)))
        print(
            String(
                format: "added by the relay, against the sink alone, at p50/p99: %.3f / %.3f ms",
                (paced.percentile(0.5) - bare.percentile(0.5)).millisecondsDouble,
                (paced.percentile(0.99) - bare.percentile(0.99)).millisecondsDouble
            )
        )
        let sinkStart = clock.now
        let flat = try await load(alone.endpoint, alone.secret, rate: 0).run()
        print(flat.printed(title: "through the relay to a sink, full load (the relay's answers)"))
        let sinkDrained = await Self.drained(alone)
        let sinkElapsed = clock.now - sinkStart
        print(
            String(
                format: "carried by the relay alone: %.0f events/s (%d forwarded in %.1f s%@)",
                Double(alone.statistics.forwardedItems - paced.accepted) / sinkElapsed.secondsDouble,
                alone.statistics.forwardedItems - paced.accepted,
                sinkElapsed.secondsDouble,
                sinkDrained ? "" : "; not drained after 60 s"
            )
        )
        await alone.close()
        sink.task.cancel()
        try await client.shutdown()
    }

    /// An OTLP endpoint that reads each export and answers 200 with an empty response.
    static func sink() async throws -> (url: String, task: Task<Void, any Error>) {
        let router = Router()
        for path in ["/v1/logs", "/v1/traces", "/v1/metrics"] {
            router.post(RouterPath(path)) { request, _ in
                _ = try await request.body.collect(upTo: 64 << 20)
                return Response(status: .ok, headers: [.contentType: "application/x-protobuf"])
            }
        }
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: Logger(label: "sink", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let task = Task { try await application.run() }
        for await port in ports { return ("http://127.0.0.1:\(port)", task) }
        throw CancellationError()
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

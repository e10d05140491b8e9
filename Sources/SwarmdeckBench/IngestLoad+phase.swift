import Foundation
import SwarmdeckTools

extension IngestLoad {
    /// Runs `measure` while ingest takes `rate` events/s (4 connections, batches of 100) for
    /// `seconds`: `measure` starts once the load has run 2 s and gets the instant it must stop
    /// by (4 s before the load ends). Returns what it measured and the load's report.
    static func during<T: Sendable>(
        url: String,
        key: String,
        rate: Double,
        seconds: Double,
        _ measure: @Sendable (ContinuousClock.Instant) async throws -> T
    ) async throws -> (T, Report) {
        let load = IngestLoad(url: url, key: key, connections: 4, batch: 100, rate: rate, duration: .seconds(max(10, seconds)))
        let loading = Task { try await load.run() }
        try await Task.sleep(for: .seconds(2))
        let measured = try await measure(ContinuousClock.now + load.duration - .seconds(6))
        return (measured, try await loading.value)
    }
}

import Foundation
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Ingest killed mid-load (live, the real executable)", .tags(.heavy))
struct IngestCrashTests {
    @Test("kill -9 during a load run: every acknowledged event is in the log")
    func killNine() async throws {
        let harness = try await IngestHarness()
        let (process, base, key) = try await harness.startExecutable()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        // Writers post until the process dies; each remembers what was acknowledged.
        let acknowledged = try await withThrowingTaskGroup(of: [String].self) { group in
            for writer in 0..<4 {
                group.addTask {
                    var acked: [String] = []
                    for round in 0..<10_000 {
                        let ids = (0..<50).map { "k\(writer)-\(round)-\($0)" }
                        let body = try JSONSerialization.data(withJSONObject: ["events": ids.map { logEvent($0) }])
                        var request = URLRequest(url: URL(string: base + "/v1/ingest/events")!)
                        request.httpMethod = "POST"
                        request.httpBody = body
                        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
                        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                        request.timeoutInterval = 5
                        guard let (_, response) = try? await URLSession.shared.data(for: request),
                            (response as? HTTPURLResponse)?.statusCode == 200
                        else { return acked }  // the server is gone: stop
                        acked += ids
                    }
                    return acked
                }
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(1500))
                kill(process.processIdentifier, SIGKILL)
                return []
            }
            return try await group.reduce(into: [String]()) { $0 += $1 }
        }
        try await offPool { process.waitUntilExit() }
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(acknowledged.count > 0)

        let postgres = PostgresClient(
            configuration: try PostgresClient.Configuration(url: try harness.environment["POSTGRES_URL"]!, maxConnections: 2)
        )
        let running = Task { await postgres.run() }
        defer { running.cancel() }
        let rows = try await postgres.query(
            "SELECT msg_id FROM \(unescaped: harness.schema).events WHERE tenant_id = \(harness.tenant)"
        )
        var stored = Set<String>()
        for try await msgID in rows.decode(String.self) { stored.insert(msgID) }
        let missing = acknowledged.filter { !stored.contains($0) }
        #expect(missing.isEmpty, "acknowledged but not stored: \(missing.prefix(5))")
        // Seqs stay contiguous whatever was cut off.
        let gaps = try await postgres.query(
            "SELECT count(*)::int, max(seq)::int FROM \(unescaped: harness.schema).events WHERE tenant_id = \(harness.tenant)"
        )
        for try await (count, high) in gaps.decode((Int, Int).self) { #expect(count == high) }
    }
}

import APNsLocal
import Foundation
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

/// The notifier executable killed with SIGKILL in the middle of a burst.
@Suite("Notifier killed mid-burst (live, the real executable)", .tags(.heavy))
struct NotifierCrashTests {
    static func start(_ environment: [String: String]) throws -> Process {
        let process = Swarmdeckd.process("notifier")
        var environment = environment
        environment["HTTP_PORT"] = String(try freeLoopbackPort())
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    @Test("kill -9 during a burst of 1000 pushes: after a restart every one is delivered at least once, and each duplicate was counted")
    func killNine() async throws {
        let devices = 200
        let overrides = [
            "NOTIFIER_DEVICE_PUSH_LIMIT": "1000", "NOTIFIER_SEND_CONCURRENCY": "16", "NOTIFIER_APNS_TIMEOUT_MS": "1000",
        ]
        let harness = try await NotifierHarness.start(overrides)
        let (nats, jetStream, subjects) = try await harness.publisher()
        // The devices register through the service in process, which then stops.
        try await harness.run { notifier in
            for n in 1...devices { try await harness.register(notifier, device: "phone-\(n)", token: n) }
        }
        harness.apns.program(APNsLocalRule(status: 200, count: nil, delayMilliseconds: 40))
        let environment = try harness.live.environment()
        let process = try Self.start(environment)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        for n in 0..<5 { try await NotifierHarness.publishIncident(jetStream, subjects, tenant: harness.tenant, id: "burst_\(n)") }
        _ = try await harness.waitForPushes(300, seconds: 60)
        kill(process.processIdentifier, SIGKILL)
        try await offPool { process.waitUntilExit() }
        #expect(process.terminationReason == .uncaughtSignal)
        let beforeRestart = harness.apns.received().count
        #expect(beforeRestart < 1000, "the burst ended before the kill: nothing was tested")
        let restarted = try Self.start(environment)
        defer { if restarted.isRunning { kill(restarted.processIdentifier, SIGKILL) } }
        var delivered: [APNsLocalPush] = []
        var unique: Set<String> = []
        let deadline = ContinuousClock.now + .seconds(90)
        while unique.count < 1000, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            delivered = harness.apns.received().filter { $0.status == 200 }
            unique = Set(delivered.compactMap(\.apnsID))
        }
        #expect(unique.count == 1000)
        let duplicates = delivered.count - unique.count

        let postgres = PostgresClient(configuration: try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 2))
        let running = Task { await postgres.run() }
        defer { running.cancel() }
        let schema = environment["NOTIFIER_SCHEMA"]!
        var sent = 0
        var counted = 0
        // The last answers may still be on their way into the jobs table.
        for _ in 0..<100 where sent < 1000 {
            let rows = try await postgres.query(
                "SELECT count(*) FILTER (WHERE state = 'sent'), COALESCE(sum(unsure_resends), 0)::int8 FROM \(unescaped: schema).jobs"
            )
            for try await (s, u) in rows.decode((Int, Int).self) { (sent, counted) = (s, u) }
            if sent < 1000 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(sent == 1000)
        #expect(duplicates <= counted, "every duplicate is a resend after an attempt whose outcome was lost")
        print(
            "notifier kill -9: \(beforeRestart) pushes before the kill, 1000 delivered after the restart, \(duplicates) duplicates, \(counted) unsure resends counted"
        )
        await nats.close()
        try await harness.stop()
    }
}

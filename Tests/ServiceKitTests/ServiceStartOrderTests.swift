import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import ServiceKit
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

/// A service whose migration takes a second and whose own service writes, as soon as it runs, to
/// the table that migration makes.
enum StartOrderService: SwarmdeckService {
    struct Settings: ServiceSettings {
        @Setting("start-order.schema", "the test's schema", default: "start_order", .identifier)
        var schema: String
    }

    static let name = "start-order"
    static let defaultPort = 0
    static let edgeRoutes: [String] = []

    static var migrations: [Migration] {
        [Migration(version: 1, name: "marks", sql: "SELECT pg_sleep(1); CREATE TABLE marks (at timestamptz NOT NULL DEFAULT now());")]
    }

    static func natsPermissions(_ subjects: Subjects) -> NATSPermissions { NATSPermissions() }

    /// What each schema's marker met: `inserted`, or the error.
    static let met = Mutex<[String: String]>([:])

    static func assemble(_ assembly: ServiceAssembly<Settings>) async throws -> ServiceParts {
        ServiceParts(services: [Marker(postgres: assembly.postgres, schema: assembly.settings.schema, logger: assembly.logger)])
    }

    struct Marker: Service {
        let postgres: PostgresClient
        let schema: String
        let logger: Logger

        func run() async throws {
            let outcome: String
            do {
                try await self.postgres.query("INSERT INTO marks DEFAULT VALUES", logger: self.logger)
                outcome = "inserted"
            } catch {
                outcome = String(reflecting: error)
            }
            StartOrderService.met.withLock { $0[self.schema] = outcome }
            try? await gracefulShutdown()
        }
    }
}

@Suite("A service's start: its own services after its migrations (live NATS and Postgres)")
struct ServiceStartOrderTests {
    @Test("a service's own service meets the tables its migrations make, however long they take")
    func ownServicesAfterMigrations() async throws {
        let harness = try await LiveHarness()
        let schema = TestEnvironment.uniqueName("order")
        let application = try await harness.application(StartOrderService.self, extra: ["START_ORDER_SCHEMA": schema])
        try await application.test(.live) { _ in
            #expect(await eventually { StartOrderService.met.withLock { $0[schema] } != nil })
            #expect(StartOrderService.met.withLock { $0[schema] } == "inserted")
        }
    }

    @Test("a start that fails for a reason other than configuration is said in one line with status 1, not a crash")
    func failedStartSaid() async throws {
        let harness = try await LiveHarness()
        // Reached once NATS is connected: the access-token key, Ed25519 where ES256 is asked.
        let key = FileManager.default.temporaryDirectory.appendingPathComponent("swarmdeck-ed25519-\(UUID().uuidString).pub")
        defer { try? FileManager.default.removeItem(at: key) }
        try Data("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n".utf8).write(
            to: key
        )
        let process = Swarmdeckd.process("ingest")
        var environment = try harness.environment()
        environment["AUTH_JWT_PUBLIC_KEY_FILE"] = key.path
        environment["HTTP_PORT"] = "1"  // never reached
        process.environment = environment
        let said = Pipe()
        process.standardError = said
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // One that started after all (the check gone) is killed, so the read below ends.
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let deadline = Task {
            try await Task.sleep(for: .seconds(60))
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        defer { deadline.cancel() }
        let text = try await offPool {
            let data = said.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        #expect(process.terminationStatus == 1, "\(text)")
        #expect(text.hasPrefix("swarmdeckd ingest: ") && text.contains("ES256") && !text.contains("Fatal error"), "\(text)")
    }
}

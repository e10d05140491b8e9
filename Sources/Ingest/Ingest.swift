import Foundation
import ServiceKit

/// The ingest service: agent telemetry in, the event log, the live feed out.
@main
struct Ingest {
    static func main() async throws {
        let reader = try await ServiceConfiguration.reader(environment: ProcessInfo.processInfo.environment)
        JSONLogHandler.bootstrap(level: try reader.logLevel())
        let application = try await buildApplication(reader: reader)
        try await application.runService()
    }
}

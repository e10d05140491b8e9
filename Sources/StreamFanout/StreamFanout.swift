import Foundation
import ServiceKit

/// The stream-fanout service: live event streams to phones over WebSocket, resumable by seq.
@main
struct StreamFanout {
    static func main() async throws {
        let reader = try await ServiceConfiguration.reader(environment: ProcessInfo.processInfo.environment)
        JSONLogHandler.bootstrap(level: try reader.logLevel())
        let application = try await buildApplication(reader: reader)
        try await application.runService()
    }
}

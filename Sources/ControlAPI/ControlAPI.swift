import Foundation
import ServiceKit

/// Control-api: operators sign in, read the fleet and steer it; agents fetch their commands.
@main
struct ControlAPI {
    static func main() async throws {
        let reader = try await ServiceConfiguration.reader(environment: ProcessInfo.processInfo.environment)
        JSONLogHandler.bootstrap(level: try reader.logLevel())
        let application = try await buildApplication(reader: reader)
        try await application.runService()
    }
}

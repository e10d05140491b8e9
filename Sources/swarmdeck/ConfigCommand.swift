import Approvals
import ArgumentParser
import ControlAPI
import HealthMonitor
import Ingest
import Notifier
import PipelineRunner
import ServiceKit
import StreamFanout
import TerminalBroker

/// `swarmdeck config keys [--service NAME]`: the configuration keys of the services.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Describe configuration.",
        subcommands: [Keys.self]
    )

    /// Every service the project builds, in the order of `deploy/local/services`.
    static let services: [any SwarmdeckService.Type] = [
        IngestService.self, StreamFanoutService.self, ControlAPIService.self, ApprovalsService.self, HealthMonitorService.self, NotifierService.self,
        TerminalBrokerService.self, PipelineRunnerService.self,
    ]

    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the configuration keys as Markdown tables: those every service reads, then each service's own."
        )

        @Option(help: "Only this service's keys (ServiceKit's and its own): \(ConfigCommand.services.map { $0.name }.joined(separator: ", ")).")
        var service: String?

        func validate() throws {
            if let service = self.service, !ConfigCommand.services.contains(where: { $0.name == service }) {
                throw ValidationError("unknown service '\(service)'; one of \(ConfigCommand.services.map { $0.name }.joined(separator: ", "))")
            }
        }

        func run() {
            Self.table("Every service", ServiceConfiguration.keys)
            for service in ConfigCommand.services where self.service == nil || self.service == service.name {
                print()
                Self.table("\(service.name) (default port \(service.defaultPort))", service.settingsKeys)
            }
        }

        static func table(_ title: String, _ keys: [SettingKey]) {
            print("## \(title)")
            print()
            print("| key | environment | flag | default | meaning |")
            print("| --- | --- | --- | --- | --- |")
            for key in keys {
                let value = key.defaultValue.map { "`\($0)`" } ?? (key.isOptional ? "optional" : "required")
                print("| `\(key.name)` | `\(key.environmentName)` | `\(key.flag)` | \(value) | \(key.summary) |")
            }
        }
    }
}

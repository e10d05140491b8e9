import ArgumentParser
import Foundation
import ServiceKit
import SwarmdeckServices

/// `swarmdeck config keys [--service NAME]` and `swarmdeck config docs [--check]`: the
/// configuration keys of the services, as the code declares them.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Describe configuration.",
        subcommands: [Keys.self, Docs.self]
    )

    /// Every service the project builds.
    static let services = ServiceRegistry.all

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
            print("## Every service\n")
            print(ConfigurationDocs.table(ServiceConfiguration.keys))
            for service in ConfigCommand.services where self.service == nil || self.service == service.name {
                print("## \(service.name) (default port \(service.defaultPort))\n")
                print(ConfigurationDocs.table(service.settingsKeys))
            }
        }
    }

    struct Docs: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the configuration tables of README.md and docs/<service>.md from the declarations (between their markers)."
        )

        @Option(help: "The repository's root.")
        var root = "."

        @Flag(help: "Change nothing; fail if a table is out of date.")
        var check = false

        func run() throws {
            var stale: [String] = []
            let pages = ConfigurationDocs.pages(services: ConfigCommand.services.map { ($0.name, $0.settingsKeys) })
            for page in pages {
                let url = URL(fileURLWithPath: self.root).appendingPathComponent(page.path)
                let text = try String(contentsOf: url, encoding: .utf8)
                guard let written = ConfigurationDocs.rewritten(text, keys: page.keys) else {
                    throw ValidationError("\(page.path) lacks the lines \(ConfigurationDocs.begin) and \(ConfigurationDocs.end)")
                }
                guard written != text else { continue }
                stale.append(page.path)
                if !self.check { try written.write(to: url, atomically: true, encoding: .utf8) }
            }
            if self.check && !stale.isEmpty {
                throw ValidationError("out of date: \(stale.joined(separator: ", ")); run swarmdeck config docs")
            }
            print(stale.isEmpty ? "every table is up to date" : "wrote \(stale.joined(separator: ", "))")
        }
    }
}

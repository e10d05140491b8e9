import ArgumentParser
import ServiceKit

/// `swarmdeckd config keys [--service NAME]` and `swarmdeckd config docs [--check]`: the
/// configuration keys of the services, as the code declares them.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swarmdeckd config",
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

        @OptionGroup var files: GeneratedFiles

        func run() throws {
            let pages = ConfigurationDocs.pages(services: ConfigCommand.services.map { ($0.name, $0.settingsKeys) })
            try self.files.apply(
                pages.map { page in
                    (
                        page.path,
                        { text in
                            guard let text else { throw ValidationError("\(page.path) is missing") }
                            guard let written = ConfigurationDocs.rewritten(text, keys: page.keys) else {
                                throw ValidationError("\(page.path) lacks the lines \(ConfigurationDocs.begin) and \(ConfigurationDocs.end)")
                            }
                            return written
                        }
                    )
                },
                command: "swarmdeckd config docs"
            )
        }
    }
}

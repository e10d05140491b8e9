import ArgumentParser
import Contracts
import ServiceKit

/// `swarmdeckd deploy print FILE` and `swarmdeckd deploy write [--check]`: what deployment needs
/// (the services' local ports and edge routes, their NATS users' permissions), written from the
/// registry and the services' declarations (``DeploymentFiles``).
struct DeployCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swarmdeckd deploy",
        abstract: "What deployment needs, from the registry of services.",
        subcommands: [Print.self, Write.self]
    )

    struct Print: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print one generated file: services (name, local port, edge routes) or nats-permissions (one variable per service)."
        )

        enum File: String, ExpressibleByArgument, CaseIterable {
            case services
            case natsPermissions = "nats-permissions"
        }

        @Argument(help: "services or nats-permissions.")
        var file: File

        @Option(help: "The subject prefix the permissions are for.")
        var prefix = Subjects.defaultPrefix

        func validate() throws {
            do { _ = try Subjects(prefix: self.prefix) } catch { throw ValidationError(error.message) }
        }

        func run() throws {
            switch self.file {
            case .services: print(DeploymentFiles.localServices(ServiceRegistry.all), terminator: "")
            case .natsPermissions: print(try DeploymentFiles.natsPermissions(ServiceRegistry.all, prefix: self.prefix), terminator: "")
            }
        }
    }

    struct Write: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Write deploy/local/services, deploy/staging/nats-permissions.conf, deploy/staging/postgres-roles.sql and docker-compose.yml's credentials from the registry (then run scripts/sync-services)."
        )

        @OptionGroup var files: GeneratedFiles

        func run() throws {
            try self.files.apply(try DeploymentFiles.all().map { ($0.path, $0.render) }, command: "swarmdeckd deploy write")
        }
    }
}

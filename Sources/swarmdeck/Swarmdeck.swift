import ArgumentParser

/// The Swarmdeck command line: admin commands for the local stack and operators, and benchmarks.
@main
struct Swarmdeck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swarmdeck",
        abstract: "Swarmdeck: watch and steer swarms of AI coding agents.",
        subcommands: [
            TokenCommand.self, TenantCommand.self, AgentCommand.self, ConfigCommand.self, LoadgenCommand.self, BenchCommand.self, DemoCommand.self,
        ]
    )
}

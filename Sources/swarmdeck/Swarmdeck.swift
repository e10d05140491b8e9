import ArgumentParser

/// The Swarmdeck command line: admin commands for the local stack and operators, the agent
/// connector, the load generator and the demo (the benchmarks are `swarmdeck-bench`).
@main
struct Swarmdeck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swarmdeck",
        abstract: "Swarmdeck: watch and steer swarms of AI coding agents.",
        subcommands: [
            TokenCommand.self, TenantCommand.self, DeviceCommand.self, AgentCommand.self, ApproveCommand.self, GatesCommand.self, GateCommand.self,
            ConfigCommand.self, LoadgenCommand.self, DemoCommand.self,
        ]
    )
}

import ArgumentParser
import Foundation

/// The Swarmdeck command line: admin commands for the local stack and operators, the agent
/// connector, the load generator and the demo (the benchmarks are `swarmdeck-bench`).
@main
struct Swarmdeck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swarmdeck",
        abstract: "Swarmdeck: watch and steer swarms of AI coding agents.",
        subcommands: [
            TokenCommand.self, TenantCommand.self, DeviceCommand.self, AgentCommand.self, ApproveCommand.self, GatesCommand.self, GateCommand.self,
            LoadgenCommand.self, DemoCommand.self, PushesCommand.self,
        ]
    )

    /// `swarmdeck approve hook` fails closed on any error, a bad option included (exit 2);
    /// everything else runs as ArgumentParser runs it.
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.starts(with: ["approve", "hook"]) {
            await ApproveCommand.Hook.mainFailingClosed(Array(arguments.dropFirst(2)))
        }
        await Self.main(arguments)
    }
}

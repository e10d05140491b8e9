import ArgumentParser

/// `swarmdeck-bench`: every benchmark, each printing figures measured side by side in one run
/// (build with `-c release` for meaningful figures). Apart from the operator CLI, so that it
/// stays lean.
@main
struct SwarmdeckBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swarmdeck-bench",
        abstract: "Swarmdeck's benchmarks (build with -c release for meaningful figures).",
        subcommands: [
            GateBench.self, FanoutBench.self, ControlBench.self, IngestBench.self, NeighbourBench.self, NATSBench.self, HealthBench.self,
            PushBench.self, TerminalBench.self, PipelineBench.self, RelayBench.self, ACPBench.self, AgentEventsBench.self, DeflateBench.self,
            FleetNoteBench.self,
        ]
    )
}

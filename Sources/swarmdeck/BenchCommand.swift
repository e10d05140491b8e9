import ArgumentParser

/// `swarmdeck bench …`: benchmarks that print figures measured side by side in one run.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks (build with -c release for meaningful figures).",
        subcommands: [NATSBench.self, IngestBench.self]
    )
}

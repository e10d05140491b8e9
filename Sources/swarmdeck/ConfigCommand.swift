import ArgumentParser
import ServiceKit

/// `swarmdeck config keys`: the configuration keys every service reads.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Describe configuration.",
        subcommands: [Keys.self]
    )

    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the keys every service reads, as a Markdown table.")

        func run() {
            print("| key | environment | flag | default | meaning |")
            print("| --- | --- | --- | --- | --- |")
            for key in ServiceConfiguration.keys {
                print("| `\(key.name)` | `\(key.environmentName)` | `\(key.flag)` | \(key.defaultValue.map { "`\($0)`" } ?? (key.isOptional ? "optional" : "required")) | \(key.summary) |")
            }
        }
    }
}

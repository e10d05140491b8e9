import AnthropicLocal
import ArgumentParser
import Hummingbird
import Logging

/// `anthropic-local`: the local Messages API (``AnthropicLocalServer``) as a process, for the
/// local stack.
@main
struct Main: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "anthropic-local",
        abstract: "A local Anthropic Messages API: real headers, errors and event streams, deterministic answers, faults on request."
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on.")
    var port = 9444

    @Option(name: .customLong("api-key"), help: "An API key accepted (x-api-key); repeatable. Any non-empty key when none is given.")
    var apiKeys: [String] = []

    @Option(name: .customLong("api-key-file"), help: "A file holding an API key accepted (kept off the command line); repeatable.")
    var apiKeyFiles: [String] = []

    @Option(help: "Milliseconds to wait before each streamed text delta (a message's [delay-ms:N] overrides it).")
    var deltaDelayMs = 0

    func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        let logger = Logger(label: "anthropic-local")
        guard (0...65535).contains(self.port) else { throw ValidationError("--port must be 0 to 65535") }
        guard (0...60000).contains(self.deltaDelayMs) else { throw ValidationError("--delta-delay-ms must be 0 to 60000") }
        var keys = Set(self.apiKeys)
        for path in self.apiKeyFiles {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8), !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                throw ValidationError("--api-key-file \(path) is not a readable, non-empty file")
            }
            keys.insert(text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let server = AnthropicLocalServer(apiKeys: keys, deltaDelay: .milliseconds(self.deltaDelayMs), logger: logger)
        try await server.application(host: self.host, port: self.port).runService()
    }
}

import Anthropic
import AnthropicLocal
import AsyncHTTPClient
import Logging
import Synchronization

/// A local Anthropic server (in process, any free port) and an HTTP client to reach it, for
/// one test; ``client(apiKey:maxRetries:timeout:)`` makes the production client against it.
struct AnthropicTestHarness {
    static let apiKey = "sk-ant-local-test"

    let server: AnthropicLocalServer
    let http: HTTPClient

    func client(apiKey: String? = AnthropicTestHarness.apiKey, maxRetries: Int = 2, timeout: Duration = .seconds(30)) -> AnthropicClient {
        AnthropicClient(
            baseURL: self.server.baseURL,
            apiKey: apiKey,
            httpClient: self.http,
            maxRetries: maxRetries,
            timeout: timeout,
            backoffBase: .milliseconds(10),
            logger: Self.logger("anthropic")
        )
    }

    static func logger(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = .warning
        return logger
    }

    /// Runs `body` with a started server and client; stops both whatever happens.
    static func with(_ body: (AnthropicTestHarness) async throws -> Void) async throws {
        let server = try await AnthropicLocalServer.start(apiKeys: [Self.apiKey], logger: Self.logger("anthropic-local"))
        let harness = AnthropicTestHarness(server: server, http: HTTPClient(eventLoopGroupProvider: .singleton))
        do {
            try await body(harness)
        } catch {
            try await harness.http.shutdown()
            await server.stop()
            throw error
        }
        try await harness.http.shutdown()
        await server.stop()
    }
}

/// Collects what a stream passes to `onText`.
final class AnthropicTextCollector: Sendable {
    private let parts = Mutex<[String]>([])

    func append(_ text: String) { self.parts.withLock { $0.append(text) } }

    var texts: [String] { self.parts.withLock { $0 } }
}

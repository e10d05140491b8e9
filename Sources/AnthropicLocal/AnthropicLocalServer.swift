public import Hummingbird
public import Logging
import NIOCore
import Synchronization

/// A local stand-in for Anthropic's Messages API, for the tests and the local stack: the real
/// routes, headers, bodies, errors and event stream, with deterministic answers
/// (``AnthropicLocalAnswer``) and failures on request (``AnthropicLocalFault``).
///
/// - `POST /v1/messages`: `x-api-key` must be one of the keys given (any non-empty key when none
///   is) or 401 `authentication_error`; `anthropic-version` must be present or 400; the body
///   must have `model`, `max_tokens` ≥ 1 and non-empty `messages` with roles `user` and
///   `assistant`, or 400 `invalid_request_error`. Answers JSON, or `text/event-stream` with
///   `stream: true` (`message_start`, `content_block_start`, `ping`, one `content_block_delta`
///   per five words, `content_block_stop`, `message_delta`, `message_stop`), each delta after
///   the configured delay (`[delay-ms:N]` in the last user message sets it, at most 1 s). An
///   answer longer than `max_tokens` words is cut there with `stop_reason: max_tokens`. Every
///   answer carries `request-id: req_local_<n>`, `n` counting the requests.
/// - Faults: the queue (``enqueue(_:)``, `POST /_local/faults`) gives its oldest fault to the
///   next valid request (its headers and body pass the checks above); otherwise a marker in the
///   last user message (`[fault:429]` with `retry-after: 1`, `[fault:529]`, `[fault:midstream]`,
///   `[fault:slow-first-byte-ms:N]`, `[fault:truncate]`) applies to every request holding it.
/// - `POST /_local/faults` `{"faults":[…]}`: 201; `DELETE /_local/faults`: 204;
///   `GET /_local/requests`: `{"requests":[RecordedRequest…]}`. These have no authentication:
///   the server is for loopback, tests and the local stack.
public final class AnthropicLocalServer: Sendable {
    /// What one request to `/v1/messages` asked and was answered (never its key).
    public struct RecordedRequest: Sendable, Codable, Hashable {
        /// Its number (1, 2, 3…), as in its `request-id`.
        public var index: Int
        /// The `request-id` it was answered with.
        public var requestID: String
        /// Its headers, names lowercased, without `x-api-key` and `authorization`.
        public var headers: [String: String]
        /// The model asked for (nil when the request was refused before its body was read).
        public var model: String?
        /// Its `max_tokens`.
        public var maxTokens: Int?
        /// Its system prompt.
        public var system: String?
        /// The last user message's content.
        public var userText: String?
        /// How many messages the conversation had.
        public var messageCount: Int
        /// Whether it asked for a stream.
        public var stream: Bool
        /// The status answered.
        public var status: Int
        /// The fault applied, if one was.
        public var fault: AnthropicLocalFault?
        /// Why its body was refused (400), if it was.
        public var refusal: String?
        /// The script step it was answered with (0 for the first), if its conversation had one.
        public var scriptStep: Int?
        /// The tool a script's step called in the answer, if it did.
        public var toolUse: String?
        /// The text of the `tool_result` blocks the request's last message carried (what the
        /// agent's tools, or its hooks' refusals, answered).
        public var toolResults: [String] = []
    }

    /// Why ``start(host:port:apiKeys:deltaDelay:logger:)`` failed without an error of its own.
    public struct StartError: Error, Sendable, CustomStringConvertible {
        /// What happened.
        public let description: String
    }

    /// The keys accepted; any non-empty key when empty.
    public let apiKeys: Set<String>
    /// The wait before each `content_block_delta` unless `[delay-ms:N]` says otherwise.
    public let deltaDelay: Duration
    let state = AnthropicLocalState()
    let logger: Logger
    private let boundPort = Atomic<Int>(0)
    private let runTask = Mutex<Task<Void, any Error>?>(nil)
    private let listener = Mutex<(any Channel)?>(nil)

    /// A server not yet listening: ``application(host:port:onServerRunning:)`` builds what runs
    /// it (the executable runs that), ``start(host:port:apiKeys:deltaDelay:logger:)`` runs it in
    /// the background (tests).
    public init(apiKeys: Set<String> = [], deltaDelay: Duration = .zero, logger: Logger) {
        self.apiKeys = apiKeys
        self.deltaDelay = max(.zero, deltaDelay)
        self.logger = logger
    }

    /// Starts a server in the background on `host` and `port` (0: any free port); answers once
    /// it listens. ``stop()`` ends it.
    public static func start(
        host: String = "127.0.0.1",
        port: Int = 0,
        apiKeys: Set<String> = [],
        deltaDelay: Duration = .zero,
        logger: Logger
    ) async throws -> AnthropicLocalServer {
        let server = AnthropicLocalServer(apiKeys: apiKeys, deltaDelay: deltaDelay, logger: logger)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = server.application(host: host, port: port) { port in
            continuation.yield(port)
            continuation.finish()
        }
        let task = Task {
            defer { continuation.finish() }
            try await application.run()
        }
        server.runTask.withLock { $0 = task }
        for await _ in ports { return server }
        switch await task.result {
        case .failure(let error): throw error
        case .success: throw StartError(description: "the local Anthropic server stopped before it listened")
        }
    }

    /// Stops a server ``start(host:port:apiKeys:deltaDelay:logger:)`` started and returns once
    /// it has: it stops listening, lets the open connections end (their clients close them) for
    /// up to ``stopGracePeriod``, then cancels what remains.
    public func stop() async {
        guard let task = self.runTask.withLock({ $0.take() }) else { return }
        if let listener = self.listener.withLock({ $0.take() }) {
            try? await listener.close()
        }
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                _ = await task.result
                return true
            }
            group.addTask {
                try? await Task.sleep(for: Self.stopGracePeriod)
                return false
            }
            if await group.next() == false { task.cancel() }
            group.cancelAll()
        }
    }

    /// How long ``stop()`` waits for open connections before cancelling them: 1 s.
    public static let stopGracePeriod = Duration.seconds(1)

    /// The port it listens on (0 until it does).
    public var port: Int { self.boundPort.load(ordering: .acquiring) }

    /// `http://127.0.0.1:<port>`, for ``port``.
    public var baseURL: String { "http://127.0.0.1:\(self.port)" }

    /// The Hummingbird application serving this server's routes on `host` and `port`;
    /// `onServerRunning` is told the port bound.
    public func application(
        host: String = "127.0.0.1",
        port: Int = 9444,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        Application(
            router: self.router(),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "anthropic-local"),
            onServerRunning: { channel in
                self.listener.withLock { $0 = channel }
                let bound = channel.localAddress?.port ?? port
                self.boundPort.store(bound, ordering: .releasing)
                self.logger.info("local Anthropic API listening", metadata: ["address": "http://\(host):\(bound)"])
                await onServerRunning(bound)
            },
            logger: self.logger
        )
    }

    /// Queues `fault` for the next valid request (headers and body pass the checks).
    public func enqueue(_ fault: AnthropicLocalFault) {
        _ = self.state.enqueue([fault])
    }

    /// Forgets the queued faults.
    public func clearFaults() { self.state.clearFaults() }

    /// How many faults are queued.
    public var pendingFaults: Int { self.state.pendingFaults }

    /// How many requests `/v1/messages` has received.
    public var requestCount: Int { self.state.requestCount }

    /// The requests `/v1/messages` received (the last 10 000), oldest first.
    public func requests() -> [RecordedRequest] { self.state.requests }
}

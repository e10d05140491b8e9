public import AsyncHTTPClient
import Foundation
public import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// Calls Anthropic's Messages API (`POST /v1/messages`), as JSON (``complete(_:)``) or as a
/// stream of server-sent events (``stream(_:onText:)``), retrying as the official SDKs do
/// (``AnthropicRetryPolicy``).
///
/// Every request carries `x-api-key`, `anthropic-version: 2023-06-01` and
/// `content-type: application/json`, and has a deadline (``timeout``, 10 minutes by default as
/// in the SDKs). The key is sent and nothing else: it is never logged nor put in an error.
/// Bodies read whole are capped at 8 MiB, one stream event at 1 MiB, a streamed answer at
/// 8 MiB of text. Cancelling the calling task ends the request (and any wait between
/// attempts) with ``AnthropicError/cancelled``.
public struct AnthropicClient: Sendable {
    /// Anthropic's API.
    public static let defaultBaseURL = "https://api.anthropic.com"
    /// The `anthropic-version` header every request carries.
    public static let apiVersion = "2023-06-01"
    /// The largest body read whole (a JSON answer or an error): 8 MiB.
    public static let maximumResponseBytes = 8 << 20

    /// Where the API is, without a trailing slash (a local server in tests).
    public let baseURL: String
    /// How many times and after how long a failed request is sent again.
    public let retryPolicy: AnthropicRetryPolicy
    /// How long one attempt may take, the whole answer read (or streamed) included.
    public let timeout: Duration
    private let apiKey: String?
    private let http: HTTPClient
    private let logger: Logger

    /// A client that sends with `httpClient` (which the caller owns and shuts down).
    ///
    /// - Parameters:
    ///   - apiKey: the API key; nil or blank makes every call throw
    ///     ``AnthropicError/missingAPIKey`` without sending anything.
    ///   - maxRetries: how many times a retryable failure is retried (2: three attempts).
    ///   - backoffBase: the wait before the first retry without `retry-after` (0.5 s, as the
    ///     SDKs; tests make it short); later waits double up to 8 s.
    public init(
        baseURL: String = AnthropicClient.defaultBaseURL,
        apiKey: String?,
        httpClient: HTTPClient,
        maxRetries: Int = 2,
        timeout: Duration = .seconds(600),
        backoffBase: Duration = .milliseconds(500),
        logger: Logger
    ) {
        var baseURL = baseURL
        while baseURL.hasSuffix("/") { baseURL.removeLast() }
        self.baseURL = baseURL
        self.apiKey = apiKey
        self.http = httpClient
        self.retryPolicy = AnthropicRetryPolicy(maxRetries: maxRetries, backoffBase: backoffBase)
        self.timeout = timeout
        self.logger = logger
    }

    /// Whether a key is configured (calls would otherwise throw ``AnthropicError/missingAPIKey``).
    public var hasAPIKey: Bool { self.configuredKey != nil }

    /// Sends `request` with `stream: false` and answers the whole message.
    ///
    /// - Throws: ``AnthropicError`` once the retries are spent, at once for what is never
    ///   retried.
    public func complete(_ request: AnthropicMessagesRequest) async throws(AnthropicError) -> AnthropicResponse {
        guard let key = self.configuredKey else { throw .missingAPIKey }
        var request = request
        request.stream = false
        let body = try Self.encode(request)
        return try await self.withRetries(request) { (attempt: Int) async throws(AttemptFailure) -> AnthropicResponse in
            try await self.completeOnce(body: body, key: key, attempt: attempt)
        }
    }

    /// The configured key, when it is not blank.
    var configuredKey: String? {
        guard let key = self.apiKey, !key.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return nil }
        return key
    }

    private func completeOnce(body: ByteBuffer, key: String, attempt: Int) async throws(AttemptFailure) -> AnthropicResponse {
        let response = try await self.send(body: body, key: key, accept: "application/json")
        let requestID = response.headers.first(name: "request-id")
        guard (200..<300).contains(response.status.code) else { throw await self.failure(response) }
        let bytes: ByteBuffer
        do {
            bytes = try await response.body.collect(upTo: Self.maximumResponseBytes)
        } catch {
            throw self.transportFailure(error)
        }
        let message: AnthropicWire.Message
        do {
            message = try JSONDecoder().decode(AnthropicWire.Message.self, from: Data(buffer: bytes))
        } catch {
            throw AttemptFailure(.invalidResponse("undecodable message (HTTP \(response.status.code)): \(error)"), retryable: false)
        }
        self.logger.debug(
            "Anthropic answered",
            metadata: ["request_id": "\(requestID ?? "")", "attempt": "\(attempt)", "model": "\(message.model)"]
        )
        return AnthropicResponse(
            id: message.id,
            model: message.model,
            text: message.text,
            stopReason: message.stopReason,
            usage: message.usage ?? AnthropicUsage(),
            requestID: requestID,
            attempts: attempt
        )
    }

    // MARK: Attempts

    /// Why one attempt failed, and whether another may be made.
    struct AttemptFailure: Error {
        var error: AnthropicError
        var retryable: Bool
        /// What the answer's `retry-after` headers asked for, in seconds.
        var retryAfter: Double?
        var status: Int?
        var requestID: String?

        init(_ error: AnthropicError, retryable: Bool, retryAfter: Double? = nil, status: Int? = nil, requestID: String? = nil) {
            self.error = error
            self.retryable = retryable
            self.retryAfter = retryAfter
            self.status = status
            self.requestID = requestID
        }
    }

    /// Runs `attempt` (1, 2, …) until it succeeds, fails for good, or the retries are spent;
    /// sleeps between attempts as the policy says.
    func withRetries(
        _ request: AnthropicMessagesRequest,
        _ attempt: (Int) async throws(AttemptFailure) -> AnthropicResponse
    ) async throws(AnthropicError) -> AnthropicResponse {
        var number = 1
        while true {
            if Task.isCancelled { throw .cancelled }
            self.logger.debug(
                "Anthropic request",
                metadata: ["model": "\(request.model)", "stream": "\(request.stream)", "attempt": "\(number)"]
            )
            do {
                var response = try await attempt(number)
                response.attempts = number
                return response
            } catch {
                let retriesSoFar = number - 1
                guard error.retryable, retriesSoFar < self.retryPolicy.maxRetries else { throw error.error }
                let delay = self.retryPolicy.delay(retriesSoFar: retriesSoFar, retryAfter: error.retryAfter)
                self.logger.notice(
                    "Anthropic request failed; retrying",
                    metadata: [
                        "attempt": "\(number)",
                        "status": "\(error.status.map(String.init) ?? "none")",
                        "request_id": "\(error.requestID ?? "")",
                        "error": "\(error.error)",
                        "delay_ms": "\(Int(AnthropicRetryPolicy.seconds(delay) * 1000))",
                    ]
                )
                do {
                    try await Task.sleep(for: delay)
                } catch {
                    throw .cancelled
                }
                number += 1
            }
        }
    }

    /// Sends one request; a connection failure or timeout is a retryable failure.
    func send(body: ByteBuffer, key: String, accept: String) async throws(AttemptFailure) -> HTTPClientResponse {
        var request = HTTPClientRequest(url: self.baseURL + "/v1/messages")
        request.method = .POST
        request.headers.add(name: "x-api-key", value: key)
        request.headers.add(name: "anthropic-version", value: Self.apiVersion)
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "accept", value: accept)
        request.body = .bytes(body)
        do {
            return try await self.http.execute(request, timeout: TimeAmount(self.timeout))
        } catch {
            throw self.transportFailure(error)
        }
    }

    /// The failure for an answer other than 2xx, from its status, error body and headers.
    func failure(_ response: HTTPClientResponse) async -> AttemptFailure {
        let status = Int(response.status.code)
        let requestID = response.headers.first(name: "request-id")
        let body = try? await response.body.collect(upTo: Self.maximumResponseBytes)
        if Task.isCancelled { return AttemptFailure(.cancelled, retryable: false) }
        let errorBody = body.flatMap { try? JSONDecoder().decode(AnthropicWire.ErrorBody.self, from: Data(buffer: $0)) }
        let retryAfter = AnthropicRetryPolicy.retryAfterSeconds(
            retryAfterMilliseconds: response.headers.first(name: "retry-after-ms"),
            retryAfter: response.headers.first(name: "retry-after")
        )
        return AttemptFailure(
            AnthropicError(status: status, errorType: errorBody?.error?.type, message: errorBody?.error?.message, retryAfterSeconds: retryAfter),
            retryable: AnthropicRetryPolicy.shouldRetry(status: status, shouldRetryHeader: response.headers.first(name: "x-should-retry")),
            retryAfter: retryAfter,
            status: status,
            requestID: requestID ?? errorBody?.requestID
        )
    }

    /// The failure for an error thrown while sending or reading: cancellation, an oversized
    /// body, or a network failure (retryable unless `retryable` is false).
    func transportFailure(_ error: any Error, retryable: Bool = true) -> AttemptFailure {
        if Task.isCancelled || error is CancellationError || (error as? HTTPClientError) == .cancelled {
            return AttemptFailure(.cancelled, retryable: false)
        }
        if error is NIOTooManyBytesError {
            return AttemptFailure(.invalidResponse("the response body exceeds \(Self.maximumResponseBytes) bytes"), retryable: false)
        }
        if let error = error as? HTTPClientError, error == .deadlineExceeded {
            return AttemptFailure(.network("no complete answer within \(self.timeout)"), retryable: retryable)
        }
        return AttemptFailure(.network(String(describing: error)), retryable: retryable)
    }

    static func encode(_ request: AnthropicMessagesRequest) throws(AnthropicError) -> ByteBuffer {
        do {
            return ByteBuffer(data: try JSONEncoder().encode(request))
        } catch {
            throw .invalidRequest(status: 0, type: "invalid_request_error", message: "the request cannot be encoded: \(error)")
        }
    }
}

import AsyncHTTPClient
import NIOCore

extension AnthropicClient {
    /// Sends `request` with `stream: true`, parses the server-sent events as the bytes arrive,
    /// calls `onText` with each piece of text (`text_delta`) in order, and answers the
    /// assembled message: its text, its stop reason, and its usage (`message_start`'s, with
    /// `message_delta`'s cumulative `output_tokens`).
    ///
    /// A failure is retried as for ``complete(_:)`` only while nothing has been passed to
    /// `onText` (a retry after partial output would repeat it); after that it is thrown. An
    /// `error` event (after the 200) throws ``AnthropicError/overloaded(_:)`` for
    /// `overloaded_error`, ``AnthropicError/invalidResponse(_:)`` naming the type otherwise; a
    /// stream that ends without `message_stop` throws
    /// ``AnthropicError/invalidResponse(_:)`` (`stream ended before message_stop`).
    public func stream(
        _ request: AnthropicMessagesRequest,
        onText: @Sendable (String) async -> Void
    ) async throws(AnthropicError) -> AnthropicResponse {
        guard let key = self.configuredKey else { throw .missingAPIKey }
        var request = request
        request.stream = true
        let body = try Self.encode(request)
        return try await self.withRetries(request) { (attempt: Int) async throws(AttemptFailure) -> AnthropicResponse in
            try await self.streamOnce(body: body, key: key, attempt: attempt, onText: onText)
        }
    }

    private func streamOnce(
        body: ByteBuffer,
        key: String,
        attempt: Int,
        onText: @Sendable (String) async -> Void
    ) async throws(AttemptFailure) -> AnthropicResponse {
        let response = try await self.send(body: body, key: key, accept: "text/event-stream")
        let requestID = response.headers.first(name: "request-id")
        guard (200..<300).contains(response.status.code) else { throw await self.failure(response) }
        if let type = response.headers.first(name: "content-type"), !type.lowercased().contains("text/event-stream") {
            throw AttemptFailure(.invalidResponse("expected text/event-stream, got \(type)"), retryable: false, requestID: requestID)
        }
        var parser = SSEParser()
        var assembler = AnthropicStreamAssembler()
        var delivered = false
        do {
            for try await buffer in response.body {
                for event in try parser.feed(buffer) {
                    if let text = try assembler.apply(event) {
                        delivered = true
                        await onText(text)
                    }
                }
            }
        } catch let error as AnthropicError {
            // Only an overloaded stream is worth another attempt, and only before any output.
            var retryable = false
            if case .overloaded = error { retryable = !delivered }
            throw AttemptFailure(error, retryable: retryable, requestID: requestID)
        } catch {
            var failure = self.transportFailure(error, retryable: !delivered)
            failure.requestID = requestID
            throw failure
        }
        do {
            return try assembler.response(requestID: requestID, attempts: attempt)
        } catch {
            throw AttemptFailure(error, retryable: false, requestID: requestID)
        }
    }
}

import Foundation

/// Builds an ``AnthropicResponse`` from a stream's events, in order: `message_start` gives the
/// id, the model and the input usage; `content_block_start` and `content_block_delta`
/// (`text_delta`) the text; `message_delta` the stop reason and the cumulative output tokens;
/// `message_stop` the end. `ping`, other delta kinds and unknown events are ignored; an `error`
/// event throws.
struct AnthropicStreamAssembler {
    /// The most text one answer may assemble (8 MiB of UTF-8).
    static let maximumTextBytes = 8 << 20

    private(set) var id: String?
    private(set) var model: String?
    private(set) var text = ""
    private(set) var stopReason: String?
    private(set) var usage = AnthropicUsage()
    /// Whether `message_stop` arrived.
    private(set) var stopped = false
    private var textBytes = 0

    /// Applies one event; answers the text it adds, if any.
    mutating func apply(_ event: SSEEvent) throws(AnthropicError) -> String? {
        guard !self.stopped else { return nil }
        switch event.event {
        case "ping":
            return nil
        case nil:
            // No `event:` line: the data's own `type` names it.
            guard let type = (try? Self.decode(event))?.type, type != "ping" else { return nil }
            return try self.apply(SSEEvent(event: type, data: event.data))
        case "message_start":
            guard let message = try Self.decode(event).message else { throw .invalidResponse("message_start without a message") }
            self.id = message.id
            self.model = message.model
            self.usage = message.usage ?? AnthropicUsage()
            return try self.append(message.text)
        case "content_block_start":
            guard let block = try Self.decode(event).contentBlock, block.type == "text" else { return nil }
            return try self.append(block.text ?? "")
        case "content_block_delta":
            guard let delta = try Self.decode(event).delta, delta.type == "text_delta" else { return nil }
            return try self.append(delta.text ?? "")
        case "message_delta":
            let data = try Self.decode(event)
            if let stopReason = data.delta?.stopReason { self.stopReason = stopReason }
            if let usage = data.usage {
                if let value = usage.inputTokens { self.usage.inputTokens = value }
                if let value = usage.outputTokens { self.usage.outputTokens = value }
                if let value = usage.cacheCreationInputTokens { self.usage.cacheCreationInputTokens = value }
                if let value = usage.cacheReadInputTokens { self.usage.cacheReadInputTokens = value }
            }
            return nil
        case "message_stop":
            self.stopped = true
            return nil
        case "error":
            let detail = (try? Self.decode(event))?.error
            throw AnthropicError(streamErrorType: detail?.type ?? "unknown_error", message: detail?.message ?? event.data)
        default:
            return nil
        }
    }

    /// The assembled answer, once `message_stop` has arrived.
    func response(requestID: String?, attempts: Int) throws(AnthropicError) -> AnthropicResponse {
        guard self.stopped else { throw .invalidResponse("stream ended before message_stop") }
        guard let id = self.id, let model = self.model else { throw .invalidResponse("stream without message_start") }
        return AnthropicResponse(
            id: id,
            model: model,
            text: self.text,
            stopReason: self.stopReason,
            usage: self.usage,
            requestID: requestID,
            attempts: attempts
        )
    }

    private mutating func append(_ text: String) throws(AnthropicError) -> String? {
        guard !text.isEmpty else { return nil }
        self.textBytes += text.utf8.count
        guard self.textBytes <= Self.maximumTextBytes else { throw .invalidResponse("the streamed answer exceeds \(Self.maximumTextBytes) bytes") }
        self.text += text
        return text
    }

    private static func decode(_ event: SSEEvent) throws(AnthropicError) -> AnthropicWire.StreamEvent {
        do {
            return try JSONDecoder().decode(AnthropicWire.StreamEvent.self, from: Data(event.data.utf8))
        } catch {
            throw .invalidResponse("undecodable \(event.event ?? "untyped") event: \(error)")
        }
    }
}

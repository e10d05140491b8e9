/// The tokens one answer used, as the API counts them. `inputTokens` excludes the cached
/// tokens, which are counted (and priced) apart: written to the cache, or read from it.
public struct AnthropicUsage: Sendable, Equatable, Hashable, Decodable {
    /// Input tokens neither written to nor read from the prompt cache.
    public var inputTokens: Int
    /// Tokens of the answer.
    public var outputTokens: Int
    /// Input tokens written to the prompt cache.
    public var cacheCreationInputTokens: Int
    /// Input tokens read from the prompt cache.
    public var cacheReadInputTokens: Int

    /// A usage; every count 0 unless given.
    public init(inputTokens: Int = 0, outputTokens: Int = 0, cacheCreationInputTokens: Int = 0, cacheReadInputTokens: Int = 0) {
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.cacheCreationInputTokens = cacheCreationInputTokens
        self.cacheReadInputTokens = cacheReadInputTokens
    }

    /// Decodes the API's `usage` object; a missing or null count is 0.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.inputTokens = try container.decodeIfPresent(Int.self, forKey: .inputTokens) ?? 0
        self.outputTokens = try container.decodeIfPresent(Int.self, forKey: .outputTokens) ?? 0
        self.cacheCreationInputTokens = try container.decodeIfPresent(Int.self, forKey: .cacheCreationInputTokens) ?? 0
        self.cacheReadInputTokens = try container.decodeIfPresent(Int.self, forKey: .cacheReadInputTokens) ?? 0
    }

    enum CodingKeys: String, CodingKey {
        case inputTokens = "input_tokens"
        case outputTokens = "output_tokens"
        case cacheCreationInputTokens = "cache_creation_input_tokens"
        case cacheReadInputTokens = "cache_read_input_tokens"
    }
}

/// A complete answer from the Messages API, whether it came as JSON or as a stream.
public struct AnthropicResponse: Sendable, Equatable {
    /// The message id (`msg_…`).
    public var id: String
    /// The model that answered.
    public var model: String
    /// The answer: its `text` content blocks, concatenated.
    public var text: String
    /// Why the model stopped (`end_turn`, `max_tokens`, `stop_sequence`, `refusal`, …).
    public var stopReason: String?
    /// The tokens the answer used.
    public var usage: AnthropicUsage
    /// The `request-id` header of the response, for Anthropic's support.
    public var requestID: String?
    /// How many HTTP attempts it took (1 when the first succeeded).
    public var attempts: Int

    /// A response.
    public init(
        id: String,
        model: String,
        text: String,
        stopReason: String?,
        usage: AnthropicUsage,
        requestID: String?,
        attempts: Int = 1
    ) {
        self.id = id
        self.model = model
        self.text = text
        self.stopReason = stopReason
        self.usage = usage
        self.requestID = requestID
        self.attempts = attempts
    }
}

/// One call to the Messages API (`POST /v1/messages`): the model, the token budget, the system
/// prompt and the conversation. The client sets ``stream`` itself (``AnthropicClient/complete(_:)``
/// sends `false`, ``AnthropicClient/stream(_:onText:)`` `true`). Encodes with the API's
/// snake_case keys; absent optionals are left out of the body.
public struct AnthropicMessagesRequest: Sendable, Encodable, Equatable {
    /// The model id, e.g. `claude-sonnet-4-6`.
    public var model: String
    /// The most tokens the answer may have (`max_tokens`, at least 1).
    public var maxTokens: Int
    /// The system prompt.
    public var system: String?
    /// The conversation so far, oldest first; the last one is normally the user's.
    public var messages: [AnthropicMessage]
    /// The sampling temperature (0 to 1).
    public var temperature: Double?
    /// Whether the answer comes as server-sent events; set by the client.
    public var stream: Bool

    /// A request; ``stream`` starts `false` and is set by the client.
    public init(model: String, maxTokens: Int, system: String? = nil, messages: [AnthropicMessage], temperature: Double? = nil) {
        self.model = model
        self.maxTokens = maxTokens
        self.system = system
        self.messages = messages
        self.temperature = temperature
        self.stream = false
    }

    enum CodingKeys: String, CodingKey {
        case model
        case maxTokens = "max_tokens"
        case system
        case messages
        case temperature
        case stream
    }
}

/// One turn of the conversation: who said it (`user` or `assistant`) and what (plain text).
public struct AnthropicMessage: Sendable, Codable, Equatable {
    /// Who said it: `user` or `assistant` (the API refuses anything else with a 400).
    public var role: String
    /// What was said.
    public var content: String

    /// A message from `role` (`user` or `assistant`).
    public init(role: String, content: String) {
        self.role = role
        self.content = content
    }

    /// A message from the user.
    public static func user(_ content: String) -> AnthropicMessage { AnthropicMessage(role: "user", content: content) }

    /// A message from the assistant (an earlier answer, or a prefill).
    public static func assistant(_ content: String) -> AnthropicMessage { AnthropicMessage(role: "assistant", content: content) }
}

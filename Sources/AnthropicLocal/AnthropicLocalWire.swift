import Contracts
import Foundation

/// The Messages API's shapes as the local provider reads and writes them.
enum AnthropicLocalWire {
    // MARK: Request

    /// The request body, every field optional so a missing one gets the API's message.
    struct MessagesRequest: Decodable {
        var model: String?
        var maxTokens: Int?
        var system: Text?
        var messages: [RequestMessage]?
        var temperature: Double?
        var stream: Bool?
        var tools: [ToolDefinition]?

        enum CodingKeys: String, CodingKey {
            case model
            case maxTokens = "max_tokens"
            case system
            case messages
            case temperature
            case stream
            case tools
        }
    }

    /// A tool the request offers (only its name is read).
    struct ToolDefinition: Decodable {
        var name: String?
    }

    struct RequestMessage: Decodable {
        var role: String?
        var content: Text?
    }

    /// A string, or an array of content blocks whose `text` blocks are concatenated (and whose
    /// `tool_result` blocks' text is kept apart).
    struct Text: Decodable {
        var text: String
        var toolResults: [String] = []

        struct Block: Decodable {
            var type: String
            var text: String?
            /// A `tool_result`'s content: a string or blocks.
            var content: Text?
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self.text = text
            } else {
                let blocks = try container.decode([Block].self)
                self.text = blocks.filter { $0.type == "text" }.compactMap(\.text).joined()
                self.toolResults = blocks.filter { $0.type == "tool_result" }.map { $0.content?.text ?? "" }
            }
        }
    }

    /// A request that passed validation.
    struct Validated {
        var model: String
        var maxTokens: Int
        var system: String?
        var messages: [(role: String, content: String)]
        var stream: Bool
        /// The names of the tools offered.
        var toolNames: [String] = []
        /// The text of the `tool_result` blocks of the last message.
        var lastToolResults: [String] = []

        /// The last user message's content ("" when there is none).
        var lastUserMessage: String { self.messages.last { $0.role == "user" }?.content ?? "" }

        /// The assistant turns the conversation holds.
        var assistantTurns: Int { self.messages.count { $0.role == "assistant" } }
    }

    /// The beta under which a conversation may hold `system` messages (per-turn instructions,
    /// as Claude Code sends them).
    static let perTurnControlBeta = "per-turn-control-2026-07-01"

    /// Decodes and checks a request body as the API does; answers the API's message when it
    /// is refused. `system` messages pass only with `systemMessages` (the beta above).
    static func validate(_ body: Data, systemMessages: Bool = false) -> Result<Validated, RequestError> {
        let request: MessagesRequest
        do {
            request = try JSONDecoder().decode(MessagesRequest.self, from: body)
        } catch let error as DecodingError {
            return .failure(RequestError(Self.describe(error)))
        } catch {
            return .failure(RequestError("The request body is not valid JSON: \(error)"))
        }
        guard let model = request.model, !model.isEmpty else { return .failure(RequestError("model: Field required")) }
        guard let maxTokens = request.maxTokens else { return .failure(RequestError("max_tokens: Field required")) }
        guard maxTokens >= 1 else { return .failure(RequestError("max_tokens: Input should be greater than or equal to 1")) }
        guard let messages = request.messages else { return .failure(RequestError("messages: Field required")) }
        guard !messages.isEmpty else { return .failure(RequestError("messages: at least one message is required")) }
        var validated: [(role: String, content: String)] = []
        for (index, message) in messages.enumerated() {
            guard let role = message.role, role == "user" || role == "assistant" || (systemMessages && role == "system") else {
                return .failure(RequestError("messages.\(index).role: Input should be 'user' or 'assistant'"))
            }
            guard let content = message.content else { return .failure(RequestError("messages.\(index).content: Field required")) }
            validated.append((role, content.text))
        }
        if let temperature = request.temperature, !(0...1).contains(temperature) {
            return .failure(RequestError("temperature: Input should be between 0 and 1"))
        }
        return .success(
            Validated(
                model: model,
                maxTokens: maxTokens,
                system: request.system?.text,
                messages: validated,
                stream: request.stream ?? false,
                toolNames: request.tools?.compactMap(\.name) ?? [],
                lastToolResults: messages.last?.content?.toolResults ?? []
            )
        )
    }

    struct RequestError: Error {
        var message: String

        init(_ message: String) { self.message = message }
    }

    private static func describe(_ error: DecodingError) -> String {
        let context: DecodingError.Context
        switch error {
        case .typeMismatch(_, let found), .valueNotFound(_, let found), .keyNotFound(_, let found), .dataCorrupted(let found):
            context = found
        @unknown default:
            return "The request body is not valid: \(error)"
        }
        let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        return path.isEmpty ? "The request body is not valid JSON: \(context.debugDescription)" : "\(path): \(context.debugDescription)"
    }

    // MARK: Answers

    /// The encoder of every answer: keys sorted, so equal answers are equal bytes.
    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    struct Usage: Encodable {
        var inputTokens: Int
        var outputTokens: Int
        var cacheCreationInputTokens = 0
        var cacheReadInputTokens = 0

        enum CodingKeys: String, CodingKey {
            case inputTokens = "input_tokens"
            case outputTokens = "output_tokens"
            case cacheCreationInputTokens = "cache_creation_input_tokens"
            case cacheReadInputTokens = "cache_read_input_tokens"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.inputTokens, forKey: .inputTokens)
            try container.encode(self.outputTokens, forKey: .outputTokens)
            try container.encode(self.cacheCreationInputTokens, forKey: .cacheCreationInputTokens)
            try container.encode(self.cacheReadInputTokens, forKey: .cacheReadInputTokens)
        }
    }

    /// A message: the JSON answer, or `message_start`'s (empty content, no stop reason).
    struct AnswerMessage: Encodable {
        var id: String
        var model: String
        var text: String?
        var stopReason: String?
        var usage: Usage
        /// A `tool_use` block instead of text.
        var toolUse: ToolUseBlock?

        enum CodingKeys: String, CodingKey {
            case id
            case type
            case role
            case model
            case content
            case stopReason = "stop_reason"
            case stopSequence = "stop_sequence"
            case usage
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.id, forKey: .id)
            try container.encode("message", forKey: .type)
            try container.encode("assistant", forKey: .role)
            try container.encode(self.model, forKey: .model)
            if let toolUse = self.toolUse {
                try container.encode([toolUse], forKey: .content)
            } else {
                try container.encode(self.text.map { [TextBlock(text: $0)] } ?? [], forKey: .content)
            }
            try container.encode(self.stopReason, forKey: .stopReason)
            try container.encodeNil(forKey: .stopSequence)
            try container.encode(self.usage, forKey: .usage)
        }
    }

    struct TextBlock: Encodable {
        var type = "text"
        var text: String
    }

    /// A `tool_use` block (in a stream's `content_block_start` its input is `{}`: the input
    /// follows as `input_json_delta` parts).
    struct ToolUseBlock: Encodable {
        var id: String
        var name: String
        var input: AttributeValue

        enum CodingKeys: String, CodingKey {
            case type, id, name, input
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode("tool_use", forKey: .type)
            try container.encode(self.id, forKey: .id)
            try container.encode(self.name, forKey: .name)
            try container.encode(self.input, forKey: .input)
        }
    }

    /// `{"type":"error","error":{"type","message"},"request_id"}`.
    struct ErrorBody: Encodable {
        var type = "error"
        var error: Detail
        var requestID: String?

        struct Detail: Encodable {
            var type: String
            var message: String
        }

        enum CodingKeys: String, CodingKey {
            case type
            case error
            case requestID = "request_id"
        }
    }

    /// One server-sent event of a streamed answer.
    enum StreamEvent: Encodable {
        case messageStart(AnswerMessage)
        case contentBlockStart
        case ping
        case textDelta(String)
        /// A `tool_use` block's start (its input follows as ``inputJSONDelta(_:)``).
        case toolUseStart(id: String, name: String)
        case inputJSONDelta(String)
        case contentBlockStop
        case messageDelta(stopReason: String, outputTokens: Int)
        case messageStop
        case error(type: String, message: String)

        /// Its `event:` name (and the data's `type`).
        var name: String {
            switch self {
            case .messageStart: "message_start"
            case .contentBlockStart: "content_block_start"
            case .ping: "ping"
            case .textDelta, .inputJSONDelta: "content_block_delta"
            case .toolUseStart: "content_block_start"
            case .contentBlockStop: "content_block_stop"
            case .messageDelta: "message_delta"
            case .messageStop: "message_stop"
            case .error: "error"
            }
        }

        enum CodingKeys: String, CodingKey {
            case type
            case message
            case index
            case contentBlock = "content_block"
            case delta
            case usage
            case error
        }

        enum DeltaKeys: String, CodingKey {
            case type
            case text
            case partialJSON = "partial_json"
            case stopReason = "stop_reason"
            case stopSequence = "stop_sequence"
        }

        enum UsageKeys: String, CodingKey {
            case outputTokens = "output_tokens"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.name, forKey: .type)
            switch self {
            case .messageStart(let message):
                try container.encode(message, forKey: .message)
            case .contentBlockStart:
                try container.encode(0, forKey: .index)
                try container.encode(TextBlock(text: ""), forKey: .contentBlock)
            case .ping, .messageStop:
                break
            case .textDelta(let text):
                try container.encode(0, forKey: .index)
                var delta = container.nestedContainer(keyedBy: DeltaKeys.self, forKey: .delta)
                try delta.encode("text_delta", forKey: .type)
                try delta.encode(text, forKey: .text)
            case .toolUseStart(let id, let name):
                try container.encode(0, forKey: .index)
                try container.encode(ToolUseBlock(id: id, name: name, input: .object([:])), forKey: .contentBlock)
            case .inputJSONDelta(let json):
                try container.encode(0, forKey: .index)
                var delta = container.nestedContainer(keyedBy: DeltaKeys.self, forKey: .delta)
                try delta.encode("input_json_delta", forKey: .type)
                try delta.encode(json, forKey: .partialJSON)
            case .contentBlockStop:
                try container.encode(0, forKey: .index)
            case .messageDelta(let stopReason, let outputTokens):
                var delta = container.nestedContainer(keyedBy: DeltaKeys.self, forKey: .delta)
                try delta.encode(stopReason, forKey: .stopReason)
                try delta.encodeNil(forKey: .stopSequence)
                var usage = container.nestedContainer(keyedBy: UsageKeys.self, forKey: .usage)
                try usage.encode(outputTokens, forKey: .outputTokens)
            case .error(let type, let message):
                try container.encode(ErrorBody.Detail(type: type, message: message), forKey: .error)
            }
        }

        /// `event: <name>\ndata: <json>\n\n`.
        func frame() throws -> [UInt8] {
            Array("event: \(self.name)\ndata: ".utf8) + Array(try AnthropicLocalWire.encoder.encode(self)) + Array("\n\n".utf8)
        }
    }
}

/// The shapes of the Messages API's answers the client reads (only the fields it uses).
enum AnthropicWire {
    /// A message: the JSON answer, and `message_start`'s `message` (with empty content).
    struct Message: Decodable {
        var id: String
        var model: String
        var content: [ContentBlock]?
        var stopReason: String?
        var usage: AnthropicUsage?

        enum CodingKeys: String, CodingKey {
            case id
            case model
            case content
            case stopReason = "stop_reason"
            case usage
        }

        /// The `text` blocks, concatenated.
        var text: String {
            (self.content ?? []).filter { $0.type == "text" }.compactMap(\.text).joined()
        }
    }

    /// A content block (`text`, `tool_use`, `thinking`, …); only text is read.
    struct ContentBlock: Decodable {
        var type: String
        var text: String?
    }

    /// `{"type":"error","error":{"type","message"},"request_id"}`, the body of every error
    /// and the data of a stream's `error` event.
    struct ErrorBody: Decodable {
        var error: Detail?
        var requestID: String?

        struct Detail: Decodable {
            var type: String?
            var message: String?
        }

        enum CodingKeys: String, CodingKey {
            case error
            case requestID = "request_id"
        }
    }

    /// The data of any stream event; which fields are there depends on its type.
    struct StreamEvent: Decodable {
        var type: String?
        var message: Message?
        var contentBlock: ContentBlock?
        var delta: Delta?
        var usage: DeltaUsage?
        var error: ErrorBody.Detail?

        enum CodingKeys: String, CodingKey {
            case type
            case message
            case contentBlock = "content_block"
            case delta
            case usage
            case error
        }
    }

    /// `content_block_delta`'s delta (`text_delta`, `input_json_delta`, …) or
    /// `message_delta`'s (`stop_reason`).
    struct Delta: Decodable {
        var type: String?
        var text: String?
        var stopReason: String?

        enum CodingKeys: String, CodingKey {
            case type
            case text
            case stopReason = "stop_reason"
        }
    }

    /// `message_delta`'s usage: cumulative counts, of which only some may be present.
    struct DeltaUsage: Decodable {
        var inputTokens: Int?
        var outputTokens: Int?
        var cacheCreationInputTokens: Int?
        var cacheReadInputTokens: Int?

        enum CodingKeys: String, CodingKey {
            case inputTokens = "input_tokens"
            case outputTokens = "output_tokens"
            case cacheCreationInputTokens = "cache_creation_input_tokens"
            case cacheReadInputTokens = "cache_read_input_tokens"
        }
    }
}

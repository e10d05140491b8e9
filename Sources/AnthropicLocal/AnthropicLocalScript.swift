public import Contracts
import Foundation

/// A conversation's script: what a coding agent (Claude Code) is to be told to do, turn by turn,
/// written into its prompt between `<local-script>` and `</local-script>` as a JSON array of
/// steps. The answer to a request is the step after the assistant turns the conversation
/// already holds (the agent sends the whole conversation each time), so concurrent agents and
/// retried requests get the same answers. Pure.
///
/// A step is one of
/// - `{"tool": "Bash", "input": {"command": "ls"}}`: a `tool_use` block calling that tool with
///   that input (when the request offers no tool of that name, the answer says so in text);
/// - `{"text": "…"}`: a text answer that ends the turn;
///
/// and either may carry `"usage": {"input_tokens": N, "cache_read_input_tokens": N,
/// "cache_creation_input_tokens": N, "output_tokens": N}` to report instead of the counted
/// usage (a context near its window, say). Past the last step the answer is "Done." and the
/// turn ends.
public struct AnthropicLocalScript: Sendable, Equatable {
    public struct Usage: Sendable, Equatable, Codable {
        public var inputTokens: Int?
        public var outputTokens: Int?
        public var cacheReadInputTokens: Int?
        public var cacheCreationInputTokens: Int?

        enum CodingKeys: String, CodingKey {
            case inputTokens = "input_tokens"
            case outputTokens = "output_tokens"
            case cacheReadInputTokens = "cache_read_input_tokens"
            case cacheCreationInputTokens = "cache_creation_input_tokens"
        }
    }

    public enum Action: Sendable, Equatable {
        /// Call `name` with `input`, a JSON object.
        case tool(name: String, input: AttributeValue)
        case text(String)
    }

    public struct Step: Sendable, Equatable {
        public var action: Action
        public var usage: Usage?
    }

    public var steps: [Step]

    public static let openTag = "<local-script>"
    public static let closeTag = "</local-script>"
    /// The most steps a script may have.
    public static let maximumSteps = 1000

    /// A tool input's JSON text, keys sorted.
    public static func text(of input: AttributeValue) -> String {
        (try? AnthropicLocalWire.encoder.encode(input)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }

    /// The script in `text` (a user message), if it holds one.
    public static func find(in text: String) throws(ScriptError) -> AnthropicLocalScript? {
        guard let open = text.range(of: Self.openTag) else { return nil }
        guard let close = text.range(of: Self.closeTag, range: open.upperBound..<text.endIndex) else {
            throw ScriptError("\(Self.openTag) without \(Self.closeTag)")
        }
        return try Self.parse(Data(text[open.upperBound..<close.lowerBound].utf8))
    }

    private struct StepWire: Decodable {
        var tool: String?
        var input: AttributeValue?
        var text: String?
        var usage: Usage?
    }

    static func parse(_ json: Data) throws(ScriptError) -> AnthropicLocalScript {
        let list: [StepWire]
        do {
            list = try JSONDecoder().decode([StepWire].self, from: json)
        } catch {
            throw ScriptError("a script is a JSON array of steps ({\"tool\",\"input\"} or {\"text\"}, each with an optional usage): \(error)")
        }
        guard list.count <= Self.maximumSteps else { throw ScriptError("at most \(Self.maximumSteps) steps") }
        var steps: [Step] = []
        for (index, step) in list.enumerated() {
            let action: Action
            if let name = step.tool, !name.isEmpty {
                let input = step.input ?? .object([:])
                guard case .object = input else { throw ScriptError("step \(index): input must be an object") }
                action = .tool(name: name, input: input)
            } else if let text = step.text {
                action = .text(text)
            } else {
                throw ScriptError("step \(index) needs \"tool\" or \"text\"")
            }
            steps.append(Step(action: action, usage: step.usage))
        }
        return AnthropicLocalScript(steps: steps)
    }

    /// The step answering a conversation with `assistantTurns` assistant messages so far.
    public func step(after assistantTurns: Int) -> Step {
        assistantTurns < self.steps.count ? self.steps[assistantTurns] : Step(action: .text("Done."), usage: nil)
    }

    public struct ScriptError: Error, Sendable, Equatable {
        public var message: String
        init(_ message: String) { self.message = message }
    }
}

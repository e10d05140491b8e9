import Foundation

/// The local provider's answers, deterministic so tests can predict them (and their cost).
///
/// - With a system prompt containing `pipeline` (the planner's), a sentence and a fenced
///   ```` ```json ```` block `{"pipeline":[researcher, producer, qaReviewer]}` (keys sorted)
///   whose tasks name the goal: the last user message's first line, trimmed, at most 200
///   characters.
/// - With `[conversational]` in the last user message, plain prose without JSON (no braces).
/// - Otherwise a stage answer: `## <title>` (the first line of the last `# Your Job` section of
///   the last user message, or its first line) and a body of `N` words (40; `[words:N]` sets it,
///   at most 20 000) drawn in order from a fixed list.
///
/// Usage: ``inputTokens(system:messages:)`` is the UTF-8 bytes of the system prompt and every
/// message, divided by 4 and rounded up; ``outputTokens(_:)`` the answer's words (split on
/// whitespace). Cache counts are 0.
public enum AnthropicLocalAnswer {
    /// The words of a stage answer's body unless `[words:N]` says otherwise.
    public static let defaultWordCount = 40
    /// The most words `[words:N]` may ask for.
    public static let maximumWordCount = 20_000
    /// The longest goal or title taken from a message.
    public static let maximumLineLength = 200

    /// The body's vocabulary (50 words; drawn with stride 7 so neighbours differ).
    static let vocabulary = [
        "analysis", "evidence", "market", "signal", "growth", "customer", "insight", "risk", "strategy", "outcome",
        "baseline", "trend", "segment", "channel", "pricing", "demand", "supply", "forecast", "metric", "cohort",
        "retention", "margin", "velocity", "roadmap", "benchmark", "survey", "interview", "finding", "priority", "tradeoff",
        "constraint", "option", "scenario", "estimate", "source", "citation", "summary", "detail", "context", "impact",
        "timeline", "budget", "quality", "review", "decision", "owner", "milestone", "feedback", "iteration", "result",
    ]

    /// `input_tokens` for a request: ⌈UTF-8 bytes of `system` and `messages` / 4⌉.
    public static func inputTokens(system: String?, messages: [String]) -> Int {
        let bytes = (system?.utf8.count ?? 0) + messages.reduce(0) { $0 + $1.utf8.count }
        return (bytes + 3) / 4
    }

    /// `output_tokens` for an answer: its words, split on whitespace.
    public static func outputTokens(_ text: String) -> Int {
        text.split(whereSeparator: \.isWhitespace).count
    }

    /// The answer to a conversation whose last user message is `lastUserMessage`.
    public static func text(system: String?, lastUserMessage: String) -> String {
        if lastUserMessage.contains("[conversational]") { return Self.conversational }
        if let system, system.contains("pipeline") { return Self.planner(goal: Self.firstLine(of: lastUserMessage)) }
        let wordCount = min(max(Self.marker("words", in: lastUserMessage) ?? Self.defaultWordCount, 1), Self.maximumWordCount)
        return "## " + Self.title(of: lastUserMessage) + "\n\n" + Self.body(wordCount: wordCount)
    }

    static let conversational =
        "Happy to help. Tell me what you would like the team to produce, who it is for and how deep it should go, "
        + "and I will plan the research, the writing and the review."

    /// The planner's answer: a sentence, then the pipeline as a fenced JSON block.
    static func planner(goal: String) -> String {
        struct Stage: Encodable {
            var role: String
            var task: String
            var researchURLs: [String]?
        }
        let pipeline = [
            "pipeline": [
                Stage(role: "researcher", task: "Research: \(goal)", researchURLs: []),
                Stage(role: "producer", task: "Write a report on: \(goal)"),
                Stage(role: "qaReviewer", task: "Review the report on: \(goal)"),
            ]
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding strings and arrays of them cannot fail.
        let json = (try? encoder.encode(pipeline)).map { String(decoding: $0, as: UTF8.self) } ?? #"{"pipeline":[]}"#
        return "I'll split this into research, a report and a review.\n\n```json\n" + json + "\n```\n"
    }

    /// The first non-blank line of `text`, trimmed, at most ``maximumLineLength`` characters.
    static func firstLine(of text: String) -> String {
        let line = text.split(whereSeparator: \.isNewline).lazy.map { $0.trimmingCharacters(in: .whitespaces) }.first { !$0.isEmpty } ?? ""
        return String(line.prefix(Self.maximumLineLength))
    }

    /// A stage answer's title: the first line of the last `# Your Job` section, or the
    /// message's first line, without leading `#`.
    static func title(of message: String) -> String {
        let lines = message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        var line: String?
        if let section = lines.lastIndex(where: { $0.lowercased().hasPrefix("# your job") }) {
            line = lines[(section + 1)...].first { !$0.isEmpty }
        }
        let title = (line ?? Self.firstLine(of: message)).drop { $0 == "#" || $0.isWhitespace }
        return title.isEmpty ? "Answer" : String(title.prefix(Self.maximumLineLength))
    }

    /// `wordCount` words from the vocabulary, in sentences of 8 and paragraphs of 40.
    static func body(wordCount: Int) -> String {
        var text = ""
        text.reserveCapacity(wordCount * 10)
        for index in 0..<wordCount {
            let word = Self.vocabulary[(index * 7) % Self.vocabulary.count]
            text += index % 8 == 0 ? word.prefix(1).uppercased() + word.dropFirst() : word
            if index % 8 == 7 || index == wordCount - 1 { text += "." }
            if index < wordCount - 1 { text += index % 40 == 39 ? "\n\n" : " " }
        }
        return text
    }

    /// The number in the first `[name:N]` of `text`.
    static func marker(_ name: String, in text: String) -> Int? {
        var rest = text[...]
        while let range = rest.range(of: "[" + name + ":") {
            rest = rest[range.upperBound...]
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            if !digits.isEmpty, rest.dropFirst(digits.count).first == "]" {
                return digits.count > 9 ? 999_999_999 : Int(digits)
            }
        }
        return nil
    }

    /// The ranges of the words (runs of non-whitespace) of `text`.
    static func wordRanges(_ text: String) -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        var start: String.Index?
        var index = text.startIndex
        while index < text.endIndex {
            if text[index].isWhitespace {
                if let wordStart = start { ranges.append(wordStart..<index) }
                start = nil
            } else if start == nil {
                start = index
            }
            index = text.index(after: index)
        }
        if let wordStart = start { ranges.append(wordStart..<text.endIndex) }
        return ranges
    }

    /// `text` cut after its first `words` words, and whether it was cut.
    static func truncated(_ text: String, words: Int) -> (text: String, cut: Bool) {
        let ranges = Self.wordRanges(text)
        guard ranges.count > words, words >= 1 else { return (text, false) }
        return (String(text[..<ranges[words - 1].upperBound]), true)
    }

    /// `text` in pieces of `wordsPerChunk` words (each with the whitespace after it), which
    /// concatenate to `text`.
    static func chunks(_ text: String, wordsPerChunk: Int) -> [String] {
        let ranges = Self.wordRanges(text)
        guard !ranges.isEmpty else { return text.isEmpty ? [] : [text] }
        var chunks: [String] = []
        var start = text.startIndex
        var word = max(wordsPerChunk, 1)
        while word < ranges.count {
            let end = ranges[word].lowerBound
            chunks.append(String(text[start..<end]))
            start = end
            word += max(wordsPerChunk, 1)
        }
        chunks.append(String(text[start...]))
        return chunks
    }

    /// `text` in `count` pieces of about equal length (fewer when it is shorter), which
    /// concatenate to `text`.
    static func pieces(_ text: String, count: Int) -> [String] {
        let characters = Array(text)
        guard !characters.isEmpty else { return [] }
        let size = max(1, (characters.count + count - 1) / max(count, 1))
        return stride(from: 0, to: characters.count, by: size).map { String(characters[$0..<min($0 + size, characters.count)]) }
    }
}

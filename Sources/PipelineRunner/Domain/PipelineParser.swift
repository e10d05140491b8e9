import Foundation

/// Seed 001's `PipelineParser`: the planner's answer → the stage list. The answer's first
/// fenced `json` block is read, else the text from its first `{` to its last `}`; it must be a
/// JSON object whose `pipeline` array holds stages with a known `role` and a `task` (others are
/// skipped, as the seed does). No stage is a conversational answer: no pipeline.
enum PipelineParser {
    struct ParsedStage: Sendable, Equatable {
        var role: PipelineRole
        var task: String
        var researchURLs: [String]
    }

    /// The stages of `text`, or nil when it holds no pipeline (the planner answered in prose).
    static func parse(_ text: String) -> [ParsedStage]? {
        guard let json = Self.extractJSONBlock(from: text),
            let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            let pipeline = object["pipeline"] as? [[String: Any]]
        else { return nil }
        let stages = pipeline.compactMap { item -> ParsedStage? in
            guard let roleName = item["role"] as? String, let role = PipelineRole(rawValue: roleName), let task = item["task"] as? String else {
                return nil
            }
            // The seed keeps what `URL(string:)` accepts.
            let urls = (item["researchURLs"] as? [Any] ?? []).compactMap { $0 as? String }.filter { URL(string: $0) != nil }
            // Postgres text holds no NUL.
            return ParsedStage(
                role: role,
                task: task.replacingOccurrences(of: "\u{0}", with: ""),
                researchURLs: urls.filter { !$0.contains("\u{0}") }
            )
        }
        return stages.isEmpty ? nil : stages
    }

    /// The first fenced `json` block's content; without one, the outer braces' span.
    static func extractJSONBlock(from text: String) -> String? {
        if let open = text.range(of: "```json") {
            // `\s*` after the fence, then the shortest span to the next fence.
            var start = open.upperBound
            while start < text.endIndex, text[start].isWhitespace { start = text.index(after: start) }
            if let close = text.range(of: "```", range: start..<text.endIndex) {
                return String(text[start..<close.lowerBound])
            }
        }
        guard let start = text.firstIndex(of: "{"), let end = text.lastIndex(of: "}"), start <= end else { return nil }
        return String(text[start...end])
    }
}

import Foundation

/// The user message of a stage (seed 001's `buildContext`): the task, the previous stages'
/// work, then this stage's job; a researcher's fetched pages are appended after it.
enum StageContext {
    struct Previous: Sendable {
        var role: PipelineRole
        var output: String
    }

    static func build(goal: String, previous: [Previous], job: String) -> String {
        var parts = ["# Task\n\(goal)"]
        let done = previous.filter { !$0.output.isEmpty }
        if !done.isEmpty {
            parts.append("# Previous Work")
            for stage in done { parts.append("## \(stage.role.displayName)\n\(stage.output)") }
        }
        parts.append("# Your Job\n\(job)")
        return parts.joined(separator: "\n\n")
    }

    /// A fetched page as the seed appends it.
    static func fetched(url: String, text: String) -> String {
        "\n\n## Fetched: \(url)\n\(text)"
    }

    /// The URLs a researcher fetches: those in its task (`https?://[^\s]+`, the seed's pattern),
    /// then the planner's `researchURLs`, without repeats, at most `limit`.
    static func researchURLs(task: String, listed: [String], limit: Int = 3) -> [String] {
        var found: [String] = []
        var rest = task[...]
        while let start = rest.range(of: "http", options: .literal) {
            let candidate = rest[start.lowerBound...]
            let end = candidate.firstIndex(where: \.isWhitespace) ?? candidate.endIndex
            let token = String(candidate[..<end])
            if token.hasPrefix("http://") || token.hasPrefix("https://"), URL(string: token) != nil { found.append(token) }
            rest = candidate[end...]
            if end == candidate.endIndex { break }
        }
        var seen: Set<String> = []
        return (found + listed).filter { seen.insert($0).inserted }.prefix(limit).map { $0 }
    }
}

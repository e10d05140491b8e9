/// One session's context window (seed 000 `ContextHealth`).
///
/// - **Tokens in use** are the latest request's input + cache creation + cache read tokens
///   (what Claude Code's status line shows), not a sum over requests.
/// - **A compaction** is a drop of at least half from a request that used at least a fifth of
///   the window.
/// - **The redundancy score** is the share of the session's last ``recentCalls`` tool calls
///   (those with arguments, see ``ToolSignature``) that repeat an identical earlier call in
///   that window, where a repeated read of a file counts only if nothing wrote to that file in
///   between (re-reading changed content is not redundant). It is 0 below ``minimumCalls``.
struct ContextTracker: Sendable {
    struct Point: Sendable, Equatable {
        /// Milliseconds since the epoch.
        var at: Int64
        var tokens: Int64
    }

    static let recentCalls = 50
    static let minimumCalls = 10
    static let seriesLength = 60

    let sessionID: String
    var swarmID: String
    var agentID: String
    var model: String?
    var tokens: Int64 = 0
    var window: Int64
    var compactions = 0
    private(set) var series: [Point] = []
    private(set) var calls: [(signature: ToolSignature, redundant: Bool)] = []
    /// Milliseconds since the epoch.
    var updatedAt: Int64

    init(sessionID: String, swarmID: String, agentID: String, window: Int64, at: Int64) {
        self.sessionID = sessionID
        self.swarmID = swarmID
        self.agentID = agentID
        self.window = window
        self.updatedAt = at
    }

    var percentUsed: Double {
        self.window > 0 ? min(100, Double(self.tokens) * 100 / Double(self.window)) : 0
    }

    var redundancyScore: Double {
        guard self.calls.count >= Self.minimumCalls else { return 0 }
        return Double(self.calls.count { $0.redundant }) / Double(self.calls.count)
    }

    /// A request: its context tokens and model (and the window for it).
    mutating func request(tokens: Int64, model: String?, window: Int64, at: Int64) {
        if tokens * 2 <= self.tokens, self.tokens * 5 >= self.window { self.compactions += 1 }
        self.tokens = tokens
        if let model { self.model = model }
        self.window = window
        self.updatedAt = max(self.updatedAt, at)
        if self.series.count == Self.seriesLength { self.series.removeFirst() }
        self.series.append(Point(at: at, tokens: tokens))
    }

    /// A tool call with arguments.
    mutating func toolCall(_ signature: ToolSignature, at: Int64) {
        var redundant = false
        for earlier in self.calls.reversed() {
            if earlier.signature.hash == signature.hash {
                redundant = true
                break
            }
            // Something wrote the file since: reading it again is reading new content.
            if let path = signature.path, earlier.signature.writes, earlier.signature.path == path { break }
        }
        if self.calls.count == Self.recentCalls { self.calls.removeFirst() }
        self.calls.append((signature, redundant))
        self.updatedAt = max(self.updatedAt, at)
    }

    /// The warnings at these thresholds: `near_capacity`, `redundancy_spike`.
    func warnings(nearCapacityPercent: Double, redundancy: Double) -> [String] {
        var warnings: [String] = []
        if self.tokens > 0, self.percentUsed >= nearCapacityPercent { warnings.append("near_capacity") }
        if self.calls.count >= Self.minimumCalls, self.redundancyScore >= redundancy { warnings.append("redundancy_spike") }
        return warnings
    }
}

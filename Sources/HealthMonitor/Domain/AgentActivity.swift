/// One agent as health sees it: its reported state, when it last made progress, the approval
/// gates it waits on, its run of identical tool calls, and its last fatal event.
///
/// - **Progress** is any event of the agent other than a state report (output, tool calls,
///   usage, traces, metrics): a connector's heartbeat is not progress. Entering `running`
///   starts the clock again.
/// - **Stuck**: `running`, no progress for the threshold, and no pending approval gate (an
///   agent waiting on a person is not stuck).
/// - **A loop** (as Gemini CLI detects them): the same tool call, same arguments, `loopRepeats`
///   times in a row.
struct AgentActivity: Sendable {
    let swarmID: String
    let agentID: String
    private(set) var state: String?
    /// Milliseconds since the epoch.
    private(set) var lastProgressAt: Int64 = 0
    private(set) var lastEventAt: Int64 = 0
    private(set) var pendingGates: Set<String> = []
    private(set) var lastCall: UInt64?
    private(set) var repeats = 0
    private(set) var lastCallTool = ""
    private(set) var lastFatalAt: Int64?

    static let maxPendingGates = 64

    init(swarmID: String, agentID: String) {
        self.swarmID = swarmID
        self.agentID = agentID
    }

    mutating func state(_ state: String, at: Int64) {
        if state == "running" && self.state != "running" { self.lastProgressAt = max(self.lastProgressAt, at) }
        self.state = state
        self.lastEventAt = max(self.lastEventAt, at)
    }

    mutating func progress(at: Int64) {
        self.lastProgressAt = max(self.lastProgressAt, at)
        self.lastEventAt = max(self.lastEventAt, at)
    }

    mutating func gate(_ id: String, pending: Bool) {
        if pending {
            if self.pendingGates.count < Self.maxPendingGates { self.pendingGates.insert(id) }
        } else {
            self.pendingGates.remove(id)
        }
    }

    mutating func toolCall(tool: String, signature: ToolSignature?) {
        guard let signature else {
            self.lastCall = nil
            self.repeats = 0
            return
        }
        if self.lastCall == signature.hash {
            self.repeats += 1
        } else {
            self.lastCall = signature.hash
            self.repeats = 1
            self.lastCallTool = tool
        }
    }

    mutating func fatal(at: Int64) {
        self.lastFatalAt = max(self.lastFatalAt ?? 0, at)
    }

    func isStuck(now: Int64, stuckMilliseconds: Int64) -> Bool {
        self.state == "running" && self.pendingGates.isEmpty && now - self.lastProgressAt >= stuckMilliseconds
    }

    func isLooping(loopRepeats: Int) -> Bool { self.repeats >= loopRepeats }

    /// A fatal event within the last `window` milliseconds.
    func hadFatal(now: Int64, window: Int64) -> Bool {
        guard let last = self.lastFatalAt else { return false }
        return now - last < window
    }
}

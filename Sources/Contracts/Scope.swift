/// A permission carried by an access token (the space-separated `scope` claim).
public enum Scope: String, Sendable, Codable, CaseIterable, Comparable {
    /// Read the fleet and its live streams.
    case streamRead = "stream:read"
    /// Pause, resume and terminate agents and swarms.
    case agentsControl = "agents:control"
    /// Approve or reject approval gates.
    case approvalsDecide = "approvals:decide"
    /// List and attach terminal sessions read-only.
    case terminalAttach = "terminal:attach"
    /// Send input to an attached terminal.
    case terminalWrite = "terminal:write"
    /// Administer the tenant: enrolment codes, ingest keys, devices.
    case admin = "admin"
    /// Read ACP threads (`/v1/acp`); `stream:read` grants it too.
    case threadRead = "thread:read"
    /// Send ACP frames to an agent's thread (prompts, cancels, answers).
    case threadWrite = "thread:write"
    /// Answer an agent's permission request in a way that can let a tool run (with
    /// `thread:write`): an allow option, or any answer that is not plainly a refusal.
    case toolRun = "tool:run"

    public static func < (lhs: Scope, rhs: Scope) -> Bool { lhs.rawValue < rhs.rawValue }
}

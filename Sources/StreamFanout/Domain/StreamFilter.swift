import Contracts
import EventLog

/// What a subscription wants: matched against an event's envelope fields, never its JSON.
struct StreamFilter: Sendable, Equatable {
    var swarmIDs: Set<String>?
    var agentIDs: Set<String>?
    var minimumSeverity: BusSeverity?
    var kinds: Set<BusEventKind>?
    /// ACP threads (the `/v1/acp` connections' subscriptions).
    var threadIDs: Set<String>?
    /// Tool names as frames render them (`EventFrame.renderedStringTail`): only tool calls of
    /// these, compared byte for byte with the frame's, as the replay's SQL compares them.
    var tools: Set<[UInt8]>?

    static let everything = StreamFilter()

    func matches(_ event: FeedEvent) -> Bool {
        if let kinds = self.kinds, !kinds.contains(event.kind) { return false }
        if let threads = self.threadIDs, !threads.contains(event.threadID) { return false }
        if let minimum = self.minimumSeverity, event.severity.rawValue < minimum.rawValue { return false }
        if let swarms = self.swarmIDs, !swarms.contains(event.swarmID) { return false }
        if let agents = self.agentIDs, !agents.contains(event.agentID) { return false }
        if let tools = self.tools {
            guard event.kind == .toolCall, let tool = EventFrame.renderedTool(in: event.frame), tools.contains(tool) else { return false }
        }
        return true
    }

    /// The kind an `include` entry names: the seed's plural names (`traceEvents`, `logs`,
    /// `metrics`, `approvals`) or a frame `type`.
    static func kind(named name: String) -> BusEventKind? {
        switch name {
        case "traceEvents", "traceEvent", "traces", "trace": .trace
        case "logs", "log": .log
        case "metrics", "metric": .metric
        case "states", "state": .state
        case "toolCalls", "toolCall": .toolCall
        case "usage": .usage
        case "acp": .acp
        case "approvals", "approvalGate", "approval": .approval
        case "incidents", "incident": .incident
        default: nil
        }
    }
}

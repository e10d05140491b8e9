import Contracts
import NIOCore

/// Collapses an agent's consecutive identical log lines (same message text) into one
/// `suppressed` notice with their count, sent when the agent says something else or a second
/// after the first suppressed line.
struct Collapser {
    enum Decision {
        case suppress
        /// Send the event, after this notice of what was suppressed before it (if any).
        case send(ByteBuffer?)
    }

    private struct Agent {
        var key: Int
        var swarmID: String
        var suppressed = 0
        var from: Int64 = 0
        var to: Int64 = 0
        var since = ContinuousClock.now
    }

    private struct AgentKey: Hashable {
        var swarmID: String
        var agentID: String
    }

    let enabled: Bool
    private var agents: [AgentKey: Agent] = [:]
    /// Agents with suppressed lines not yet announced.
    private var pending = 0
    private var oldestPending: ContinuousClock.Instant?

    init(enabled: Bool) {
        self.enabled = enabled
    }

    var hasPending: Bool { self.pending > 0 }

    /// Whether some suppressed lines have waited `age` already.
    func isDue(_ age: Duration) -> Bool {
        // The count first: it is asked per event, and reading the optional instant (a resilient
        // type) goes through the runtime.
        guard self.pending > 0, let oldest = self.oldestPending else { return false }
        return ContinuousClock.now - oldest >= age
    }

    mutating func admit(_ event: FeedEvent) -> Decision {
        guard self.enabled, event.kind == .log else { return .send(nil) }
        let id = AgentKey(swarmID: event.swarmID, agentID: event.agentID)
        let key = event.repeatKey
        if var agent = self.agents[id], agent.key == key, key != 0 {
            if agent.suppressed == 0 {
                agent.from = event.seq
                agent.since = .now
                self.pending += 1
                if self.oldestPending == nil { self.oldestPending = agent.since }
            }
            agent.suppressed += 1
            agent.to = event.seq
            self.agents[id] = agent
            return .suppress
        }
        var notice: ByteBuffer?
        if let agent = self.agents[id], agent.suppressed > 0 {
            notice = Self.notice(id, agent)
            self.pending -= 1
        }
        // Bounded: past 10,000 agents start over (those with pending lines are kept).
        if self.agents.count >= 10_000 && self.agents[id] == nil { self.agents = self.agents.filter { $0.value.suppressed > 0 } }
        self.agents[id] = Agent(key: key, swarmID: event.swarmID)
        if self.pending == 0 { self.oldestPending = nil }
        return .send(notice)
    }

    /// Notices for the agents whose suppressed lines began at least `age` ago; their counts
    /// start again.
    mutating func flush(olderThan age: Duration) -> [ByteBuffer] {
        guard self.pending > 0 else { return [] }
        var notices: [ByteBuffer] = []
        let now = ContinuousClock.now
        var oldest: ContinuousClock.Instant?
        for (id, agent) in self.agents where agent.suppressed > 0 {
            if now - agent.since >= age {
                notices.append(Self.notice(id, agent))
                self.agents[id]?.suppressed = 0
                self.pending -= 1
            } else {
                oldest = min(oldest ?? agent.since, agent.since)
            }
        }
        self.oldestPending = oldest
        return notices
    }

    private static func notice(_ id: AgentKey, _ agent: Agent) -> ByteBuffer {
        FanoutMetrics.suppressed.increment(by: agent.suppressed)
        return ServerMessage.suppressed(swarmID: id.swarmID, agentID: id.agentID, count: agent.suppressed, from: agent.from, to: agent.to)
    }
}

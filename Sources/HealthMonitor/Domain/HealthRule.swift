/// The rules health-monitor raises incidents by (docs/health-monitor.md), with the severity
/// and the push type (seed 000 §6.2) of each.
enum HealthRule: String, Sendable, CaseIterable, Codable {
    case contextNearCapacity = "context_near_capacity"
    case redundancySpike = "redundancy_spike"
    case skillFailureSpike = "skill_failure_spike"
    case skillLatencyHigh = "skill_latency_high"
    case agentStuck = "agent_stuck"
    case toolLoop = "tool_loop"
    case swarmErrorRate = "swarm_error_rate"
    case runawayCost = "runaway_cost"
    case criticalError = "critical_error"

    /// info, warning or critical.
    var severity: String {
        switch self {
        case .criticalError, .swarmErrorRate, .runawayCost: "critical"
        case .contextNearCapacity, .redundancySpike, .skillFailureSpike, .skillLatencyHigh, .agentStuck, .toolLoop: "warning"
        }
    }
}

/// What an alert is about: its rule and subject, and the fingerprint that makes it one
/// incident at a time.
struct AlertSubject: Sendable, Hashable {
    var rule: HealthRule
    /// The subject within the tenant: a session, skill, agent or swarm id.
    var key: String
    var swarmID: String?
    var agentID: String?
    var sessionID: String?
    var skillID: String?

    var fingerprint: String { "\(self.rule.rawValue)|\(self.key)" }
}

/// A skill's id: stable for a tool name in a swarm.
enum SkillID {
    static func make(swarm: String, tool: String) -> String {
        let hash = ToolSignature.fnv1a(Array(swarm.utf8) + [0] + Array(tool.utf8))
        let hex = String(hash, radix: 16)
        return "sk_" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// The push types of seed 000 §6.2, which a device chooses among.
enum PushCategory: String, Sendable, Hashable, Codable, CaseIterable {
    case criticalError = "critical_error"
    case approvalGate = "approval_gate"
    case context
    case skillFailure = "skill_failure"
    case swarmDegradation = "swarm_degradation"

    /// The type an incident of health-monitor's `rule` is pushed as.
    init(rule: String) {
        switch rule {
        case "critical_error": self = .criticalError
        case "context_near_capacity", "redundancy_spike": self = .context
        case "skill_failure_spike", "skill_latency_high": self = .skillFailure
        default: self = .swarmDegradation
        }
    }

    /// The alert's title.
    var title: String {
        switch self {
        case .criticalError: "Critical error"
        case .approvalGate: "Approval needed"
        case .context: "Context health"
        case .skillFailure: "Skill failing"
        case .swarmDegradation: "Swarm degraded"
        }
    }
}

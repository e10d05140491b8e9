/// The specialist roles a stage runs as (seed 001's `AgentRole`, without the planner, which
/// only plans).
enum PipelineRole: String, Sendable, CaseIterable, Codable {
    case researcher
    case producer
    case qaReviewer

    /// The name the stage context and artifact titles show.
    var displayName: String {
        switch self {
        case .researcher: "Researcher"
        case .producer: "Producer"
        case .qaReviewer: "QA Reviewer"
        }
    }
}

/// Who a provider call is for: the planner, or a stage's role.
enum PipelineCaller: Hashable, Sendable {
    case planner
    case stage(PipelineRole)

    var name: String {
        switch self {
        case .planner: "planner"
        case .stage(let role): role.rawValue
        }
    }
}

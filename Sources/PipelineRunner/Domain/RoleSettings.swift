/// How one role calls the provider: seed 001's `AgentConfig` defaults, or a pipeline's
/// overrides.
struct RoleSettings: Sendable, Equatable, Codable {
    var model: String
    var temperature: Double
    var systemPrompt: String

    /// Seed 001's defaults (`AgentConfig.default(for:)`).
    static func defaults(for caller: PipelineCaller) -> RoleSettings {
        switch caller {
        case .planner:
            RoleSettings(model: "claude-opus-4-6", temperature: 0.7, systemPrompt: Self.plannerPrompt)
        case .stage(.researcher):
            RoleSettings(
                model: "claude-sonnet-4-6",
                temperature: 0.3,
                systemPrompt:
                    "You are a research specialist. Gather comprehensive, accurate information on the given topic. Cite sources when possible."
            )
        case .stage(.producer):
            RoleSettings(
                model: "claude-sonnet-4-6",
                temperature: 0.7,
                systemPrompt: "You are a content producer. Create high-quality, well-structured content based on the research provided."
            )
        case .stage(.qaReviewer):
            RoleSettings(
                model: "claude-sonnet-4-6",
                temperature: 0.3,
                systemPrompt:
                    "You are a QA specialist. Review the content for accuracy, clarity, and completeness. Provide specific improvement suggestions."
            )
        }
    }

    /// The planner's (seed 001's CEO's) system prompt: it asks for the stage list as JSON.
    static let plannerPrompt = """
        You are the CEO agent. Decompose the user's goal into a pipeline of specialist agents.
        Output a JSON block with the following structure:
        ```json
        {
          "pipeline": [
            { "role": "researcher", "task": "...", "researchURLs": [] },
            { "role": "producer", "task": "..." },
            { "role": "qaReviewer", "task": "..." }
          ]
        }
        ```
        Valid roles: researcher, producer, qaReviewer
        """
}

import Foundation

/// Seed 001's declarations, as the seed writes them (its "AIModel Enum", the CEO output
/// contract's roles, `PipelineParser.ParsedStage`), for decoding what the services answer.
enum Seed001 {
    enum AIModel: String, CaseIterable {
        case opusFull = "claude-opus-4-6"
        case sonnet = "claude-sonnet-4-6"
        case haiku = "claude-haiku-4-5-20251001"

        var inputPricePerMillion: Double {
            switch self {
            case .opusFull: return 15.00
            case .sonnet: return 3.00
            case .haiku: return 0.80
            }
        }

        var outputPricePerMillion: Double {
            switch self {
            case .opusFull: return 75.00
            case .sonnet: return 15.00
            case .haiku: return 4.00
            }
        }

        /// The seed's "Cost Calculation Reference" formula.
        func cost(inputTokens: Double, outputTokens: Double) -> Double {
            (inputTokens / 1_000_000) * self.inputPricePerMillion + (outputTokens / 1_000_000) * self.outputPricePerMillion
        }
    }

    /// "Valid role values: `researcher`, `producer`, `qaReviewer`".
    enum AgentRole: String {
        case researcher
        case producer
        case qaReviewer
    }

    struct ParsedStage {
        let role: AgentRole
        let task: String
        let researchURLs: [URL]
    }

    /// The CEO output contract, verbatim.
    static let ceoOutput = """
        {
          "pipeline": [
            { "role": "researcher", "task": "Research top AI tools", "researchURLs": ["https://..."] },
            { "role": "producer",   "task": "Write a comparison report" },
            { "role": "qaReviewer", "task": "Review the report for accuracy" }
          ]
        }
        """

    /// The seed's cost of a usage object (`model`, `inputTokens`, `outputTokens`), nil for a
    /// model the seed does not list.
    static func cost(_ usage: [String: Any]) -> Double? {
        guard let model = (usage["model"] as? String).flatMap(AIModel.init(rawValue:)),
            let input = (usage["inputTokens"] as? NSNumber)?.doubleValue,
            let output = (usage["outputTokens"] as? NSNumber)?.doubleValue
        else { return nil }
        return model.cost(inputTokens: input, outputTokens: output)
    }
}

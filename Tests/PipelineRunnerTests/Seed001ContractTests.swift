import Foundation
import HummingbirdTesting
import ServiceHarnesses
import TestSupport
import Testing

@testable import PipelineRunner

/// Seed 001's contracts, as the seed writes them: its CEO output (verbatim) read by the service's
/// parser into the seed's `ParsedStage`, its model table and cost formula against the service's,
/// and a pipeline run through the service whose stages and usage decode into the seed's
/// `AgentRole` and `AIModel` with the seed's costs.
@Suite("Seed 001's contract: the CEO output, the models and their prices, a pipeline's stages and costs")
struct Seed001ContractTests {
    typealias H = PipelineHarness

    @Test("the seed's CEO output, bare or in a fenced json block of a reply, parses into the seed's stages; a conversational reply is no pipeline")
    func ceoOutput() throws {
        for reply in [
            Seed001.ceoOutput,
            "Here is the plan:\n\n```json\n\(Seed001.ceoOutput)\n```\n\nShall I start?",
        ] {
            let parsed = try #require(PipelineParser.parse(reply))
            let stages = try parsed.map { stage in
                Seed001.ParsedStage(
                    role: try #require(Seed001.AgentRole(rawValue: stage.role.rawValue)),
                    task: stage.task,
                    researchURLs: stage.researchURLs.compactMap(URL.init(string:))
                )
            }
            #expect(stages.map(\.role) == [.researcher, .producer, .qaReviewer])
            #expect(stages.map(\.task) == ["Research top AI tools", "Write a comparison report", "Review the report for accuracy"])
            #expect(stages.map(\.researchURLs) == [[URL(string: "https://...")!], [], []])
        }
        #expect(PipelineParser.parse("I can help with that. What would you like the report to cover?") == nil)
    }

    @Test("the service's price table is the seed's, model for model, and its cost is the seed's formula")
    func modelsAndPrices() {
        #expect(Set(ModelPrices.seed.models.keys) == Set(Seed001.AIModel.allCases.map(\.rawValue)))
        for model in Seed001.AIModel.allCases {
            #expect(ModelPrices.seed.models[model.rawValue] == .init(input: model.inputPricePerMillion, output: model.outputPricePerMillion))
            for (input, output) in [(0, 0), (1_000_000, 500_000), (1234, 5678), (987_654_321, 3)] as [(Int64, Int64)] {
                let mine = ModelPrices.seed.cost(model: model.rawValue, input: input, output: output)
                #expect(mine == model.cost(inputTokens: Double(input), outputTokens: Double(output)), "\(model) \(input)/\(output)")
            }
        }
    }

    @Test("a pipeline through the service: the seed's roles, a model of the seed's table for every call, and the seed's cost of each (live)")
    func pipelineRun() async throws {
        let harness = try await PipelineHarness()
        defer { Task { await harness.stop() } }
        try await harness.run { _, _, _, pipelines in
            let (status, created) = try await harness.create(pipelines, ["goal": "Research top AI tools", "unattended": true])
            #expect(status == .created, "\(created)")
            let id = try #require(created["pipelineId"] as? String)
            let done = try await harness.waitFor(pipelines, id) { $0["status"] as? String == "completed" }
            let roles = H.stages(done).map { ($0["role"] as? String).flatMap(Seed001.AgentRole.init(rawValue:)) }
            #expect(roles == [.researcher, .producer, .qaReviewer])
            let usages = [done["planner"] as? H.JSON] + H.stages(done).map { $0["usage"] as? H.JSON }
            for usage in usages {
                let usage = try #require(usage)
                #expect((usage["model"] as? String).flatMap(Seed001.AIModel.init(rawValue:)) != nil, "\(usage)")
                let cost = try #require((usage["costUsd"] as? NSNumber)?.doubleValue)
                let seed = try #require(Seed001.cost(usage))
                #expect(abs(cost - seed) < 1e-9, "\(cost) vs the seed's \(seed)")
            }
        }
    }
}

import Foundation
import Testing

@testable import PipelineRunner

@Suite struct PipelineParserTests {
    @Test func fencedBlock() throws {
        let text = """
            Here is the plan.
            ```json
            {"pipeline": [
              {"role": "researcher", "task": "Research top AI tools", "researchURLs": ["https://example.com/a"]},
              {"role": "producer", "task": "Write a comparison report"},
              {"role": "qaReviewer", "task": "Review the report for accuracy"}
            ]}
            ```
            Let me know.
            """
        let stages = try #require(PipelineParser.parse(text))
        #expect(stages.map(\.role) == [.researcher, .producer, .qaReviewer])
        #expect(stages[0].researchURLs == ["https://example.com/a"])
        #expect(stages[1].task == "Write a comparison report")
    }

    @Test func bareBracesFallback() throws {
        let stages = try #require(PipelineParser.parse(#"Sure: {"pipeline":[{"role":"producer","task":"x"}]} done"#))
        #expect(stages == [.init(role: .producer, task: "x", researchURLs: [])])
    }

    @Test func conversationalIsNoPipeline() {
        #expect(PipelineParser.parse("I'd be happy to help! What is the audience for this report?") == nil)
        #expect(PipelineParser.parse("{not json}") == nil)
        #expect(PipelineParser.parse(#"{"pipeline": []}"#) == nil)
        #expect(PipelineParser.parse(#"{"stages": [{"role":"producer","task":"x"}]}"#) == nil)
    }

    @Test func unknownRolesAndMissingTasksAreSkipped() throws {
        let stages = try #require(
            PipelineParser.parse(#"{"pipeline":[{"role":"ceo","task":"x"},{"role":"producer"},{"role":"qaReviewer","task":"y"}]}"#)
        )
        #expect(stages == [.init(role: .qaReviewer, task: "y", researchURLs: [])])
    }

    /// As the seed: a fenced block that is not JSON is no pipeline, even with braces elsewhere.
    @Test func brokenFencedBlockDoesNotFallBack() {
        #expect(PipelineParser.parse("```json\n{broken\n```\n{\"pipeline\":[{\"role\":\"producer\",\"task\":\"x\"}]}") == nil)
    }

    /// Arbitrary text never traps.
    @Test func fuzz() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("{}[]\":,`json pipeline role task producer\n\\")
        for _ in 0..<2000 {
            let text = String((0..<Int.random(in: 0..<80, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            _ = PipelineParser.parse(text)
        }
    }
}

@Suite struct PipelineCostTests {
    /// Seed 001's formula with its table.
    @Test func seedFormula() throws {
        let prices = ModelPrices.seed
        #expect(prices.cost(model: "claude-sonnet-4-6", input: 1_000_000, output: 1_000_000) == 18.0)
        let cost = try #require(prices.cost(model: "claude-opus-4-6", input: 1234, output: 567))
        #expect(abs(cost - (1234.0 / 1_000_000 * 15 + 567.0 / 1_000_000 * 75)) < 1e-12)
        #expect(prices.cost(model: "claude-haiku-4-5-20251001", input: 0, output: 250_000) == 1.0)
        #expect(prices.cost(model: "gpt-4", input: 1, output: 1) == nil)
    }

    @Test func cacheTokens() throws {
        let cost = try #require(
            ModelPrices.seed.cost(model: "claude-sonnet-4-6", input: 0, output: 0, cacheCreation: 1_000_000, cacheRead: 1_000_000)
        )
        #expect(abs(cost - (3.0 * 1.25 + 3.0 * 0.1)) < 1e-12)
    }
}

@Suite struct StageContextTests {
    @Test func contextAsTheSeedBuildsIt() {
        let context = StageContext.build(
            goal: "Compare AI tools",
            previous: [.init(role: .researcher, output: "notes"), .init(role: .producer, output: "")],
            job: "Review it"
        )
        #expect(context == "# Task\nCompare AI tools\n\n# Previous Work\n\n## Researcher\nnotes\n\n# Your Job\nReview it")
        #expect(StageContext.build(goal: "g", previous: [], job: "j") == "# Task\ng\n\n# Your Job\nj")
    }

    @Test func researchURLs() {
        let urls = StageContext.researchURLs(
            task: "Read https://a.example/x and http://b.example/y, then ftp://c.example and https://a.example/x again https://d.example",
            listed: ["https://e.example"]
        )
        #expect(urls == ["https://a.example/x", "http://b.example/y,", "https://d.example"])
        #expect(StageContext.researchURLs(task: "none", listed: ["https://e.example", "https://e.example"]) == ["https://e.example"])
    }

    @Test func htmlStripped() {
        let html = "<html><head><style>p{}</style><script>alert(1)</script></head><body><p>Hello <b>world</b></p>\n\n<p>again</p></body></html>"
        #expect(HTMLText.strip(html) == "Hello world again")
        #expect(HTMLText.strip(String(repeating: "a", count: 9000)).count == 8000)
        #expect(HTMLText.strip("a <SCRIPT type=x>x()</Script> b <scripted>c</scripted>") == "a b c")
        // As the seed's expressions: a tag runs from a `<` to the next `>`; an unclosed script is a tag.
        #expect(HTMLText.strip("a < b and <script>never closed") == "a never closed")
        #expect(HTMLText.strip("x <style>p{}") == "x p{}")
        #expect(HTMLText.strip("1 < 2") == "1 < 2")
        #expect(HTMLText.strip("a <> b") == "a <> b")
        #expect(HTMLText.strip("<script>x=\"</scriptx>\";secret()</script>shown") == "shown")
    }

    /// Pages built to make a backtracking stripper quadratic pass in one sweep.
    @Test func pathologicalPagesAreLinear() {
        let lessThans = String(repeating: "<", count: 1 << 20)
        #expect(HTMLText.strip(lessThans).count == 8000)
        let scripts = String(repeating: "<script>", count: 100_000)
        #expect(HTMLText.strip(scripts).isEmpty)
        let tags = String(repeating: "<a <b ", count: 100_000)
        #expect(HTMLText.strip(tags).count <= 8000)
        let closers = "<script>" + String(repeating: "</script", count: 250_000)
        #expect(HTMLText.strip(closers).count <= 8000)
    }

    @Test func outputPiecesAreBoundedInBytes() {
        let text = String(repeating: "é", count: 10_000)
        let pieces = OutputGrowth.pieces(text)
        #expect(pieces.allSatisfy { $0.utf8.count <= OutputGrowth.maxPieceBytes })
        #expect(pieces.joined() == text)
        #expect(OutputGrowth.pieces("").isEmpty)
    }
}

@Suite struct PipelineStepTests {
    func stage(_ position: Int, _ status: StageStatus) -> StageRecord {
        StageRecord(position: position, role: .producer, task: "t", researchURLs: [], status: status, attempt: 0, fetches: [])
    }

    @Test func nextStep() {
        #expect(PipelineStep.next([self.stage(1, .waiting), self.stage(2, .waiting)]) == .run(1))
        #expect(PipelineStep.next([self.stage(1, .approved), self.stage(2, .running)]) == .run(2))
        #expect(PipelineStep.next([self.stage(2, .waiting), self.stage(1, .completed)]) == .awaitDecision(1))
        #expect(PipelineStep.next([self.stage(1, .approved), self.stage(2, .rejected), self.stage(3, .waiting)]) == .ended)
        #expect(PipelineStep.next([self.stage(1, .approved), self.stage(2, .approved)]) == .complete)
    }

    @Test func gateKeys() {
        let key = GateKey.make(pipeline: "pl_ab12", position: 3, attempt: 2)
        #expect(key == "pl_ab12.s3.a2")
        let parsed = GateKey.parse(key, pipeline: "pl_ab12")
        #expect(parsed?.position == 3 && parsed?.attempt == 2)
        #expect(GateKey.parse(key, pipeline: "pl_ab1") == nil)
        #expect(GateKey.parse("pl_ab12.s3", pipeline: "pl_ab12") == nil)
        #expect(GateKey.parse("pl_ab12.sx.a1", pipeline: "pl_ab12") == nil)
    }

    @Test func exportNames() {
        #expect(ArtifactExporter.sanitize("AI tools: a comparison / 2026!") == "AI tools- a comparison - 2026")
        #expect(ArtifactExporter.tenantFolder("tenant-1") == "tenant-1")
        #expect(ArtifactExporter.tenantFolder("../x") == "t-2e2e2f78")
    }

    @Test func agentStates() {
        #expect(PipelineStore.agentState(status: .running, paused: false) == "running")
        #expect(PipelineStore.agentState(status: .awaitingApproval, paused: true) == "paused")
        #expect(PipelineStore.agentState(status: .awaitingApproval, paused: false) == "waiting_approval")
        #expect(PipelineStore.agentState(status: .stopped, paused: true) == "terminated")
    }
}

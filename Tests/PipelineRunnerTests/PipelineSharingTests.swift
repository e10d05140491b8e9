import AnthropicLocal
import Foundation
import HummingbirdTesting
import PipelineRunner
import ServiceHarnesses
import TestSupport
import Testing

private typealias H = PipelineHarness

@Suite("pipeline-runner: replicas share the pipelines; export; a researcher's fetch")
struct PipelineSharingTests {
    @Test("two runners at once: every pipeline completes, each stage runs once (attempt 1) and has one artifact")
    func twoRunners() async throws {
        let harness = try await PipelineHarness(["PIPELINE_CREATES_PER_MINUTE": "1000"])
        defer { Task { await harness.stop() } }
        try await harness.run { _, _, _, first in
            try await harness.live.application(PipelineRunnerService.self).test(.router) { second in
                let token = try await harness.token()
                var ids: [String] = []
                for index in 0..<12 {
                    // Created through either replica; both claim.
                    let (status, created) = try await LiveCall.call(
                        index % 2 == 0 ? first : second,
                        .post,
                        "/v1/pipelines",
                        token: token,
                        json: ["goal": "Shared \(index)", "unattended": true]
                    )
                    #expect(status == .created, "\(created)")
                    ids.append(try #require(created["pipelineId"] as? String))
                }
                for id in ids {
                    let done = try await harness.waitFor(first, id, seconds: 60) { $0["status"] as? String == "completed" }
                    #expect(H.stages(done).allSatisfy { $0["attempt"] as? Int == 1 }, "\(done)")
                    let (_, artifacts) = try await LiveCall.call(second, .get, "/v1/pipelines/\(id)/artifacts", token: token)
                    #expect((artifacts["artifacts"] as? [H.JSON] ?? []).map { $0["position"] as? Int } == [1, 2, 3])
                }
            }
        }
    }

    @Test("export writes each artifact as {tenant}/{title}/{role}-{ISO8601}.md under pipeline.export-dir")
    func export() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("swarmdeck-export-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let harness = try await PipelineHarness(["PIPELINE_EXPORT_DIR": directory.path])
        defer { Task { await harness.stop() } }
        try await harness.run { _, _, _, pipelines in
            let (status, created) = try await harness.create(
                pipelines,
                ["goal": "Export me", "title": "AI tools: a comparison", "unattended": true, "export": true]
            )
            #expect(status == .created, "\(created)")
            let id = try #require(created["pipelineId"] as? String)
            _ = try await harness.waitFor(pipelines, id) { $0["status"] as? String == "completed" }
            let (_, artifacts) = try await LiveCall.call(pipelines, .get, "/v1/pipelines/\(id)/artifacts", token: try await harness.token())
            let paths = (artifacts["artifacts"] as? [H.JSON] ?? []).compactMap { $0["exportedPath"] as? String }
            #expect(paths.count == 3, "\(artifacts)")
            for (path, role) in zip(paths, ["researcher", "producer", "qaReviewer"]) {
                #expect(path.hasPrefix("\(harness.tenant)/AI tools- a comparison/\(role)-"), "\(path)")
                #expect(path.hasSuffix(".md") && !path.contains(":"))
                let content = try String(contentsOf: directory.appendingPathComponent(path), encoding: .utf8)
                #expect(content.hasPrefix("## "))
            }
        }
    }

    @Test("with private addresses allowed, a researcher fetches its URL and the page's text reaches the stage's context")
    func researchFetch() async throws {
        let harness = try await PipelineHarness(["PIPELINE_RESEARCH_ALLOW_PRIVATE": "true"])
        defer { Task { await harness.stop() } }
        try await harness.run { _, _, _, pipelines in
            let page = "\(harness.provider.baseURL)/_local/requests"
            let (status, created) = try await harness.create(pipelines, ["goal": "Summarize \(page)", "unattended": true])
            #expect(status == .created, "\(created)")
            let id = try #require(created["pipelineId"] as? String)
            let done = try await harness.waitFor(pipelines, id) { H.stage($0, 1)["status"] as? String == "approved" }
            let fetches = H.stage(done, 1)["fetches"] as? [H.JSON] ?? []
            #expect(fetches.first?["status"] as? String == "fetched", "\(fetches)")
            #expect((fetches.first?["characters"] as? Int ?? 0) > 0)
            #expect(harness.provider.requests().contains { ($0.userText ?? "").contains("## Fetched: \(page)") })
        }
    }
}

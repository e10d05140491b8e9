import AsyncHTTPClient
import Foundation
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import PipelineRunner
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

private typealias H = PipelineHarness

/// The pipeline-runner executable killed with SIGKILL in the middle of a stage.
@Suite("pipeline-runner killed mid-stage (live, the real executable)", .tags(.heavy))
struct PipelineCrashTests {
    @Test("kill -9 during a stage's call: after its lease runs out another runner runs the stage again, and no stage has two artifacts")
    func killNine() async throws {
        let harness = try await PipelineHarness()
        defer { Task { await harness.stop() } }
        try await harness.runInfrastructure { _, _, _ in
            let port = try freeLoopbackPort()
            var environment = try harness.live.environment()
            environment["HTTP_PORT"] = String(port)
            let process = Swarmdeckd.process("pipeline-runner")
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let token = try await harness.token()
            let base = "http://127.0.0.1:\(port)"
            func call(_ method: HTTPMethod, _ path: String, _ body: [String: Any]? = nil) async throws -> (Int, H.JSON) {
                var request = HTTPClientRequest(url: base + path)
                request.method = method
                request.headers.add(name: "Authorization", value: "Bearer \(token)")
                if let body {
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
                }
                let response = try await http.execute(request, timeout: .seconds(30))
                let bytes = try await response.body.collect(upTo: 1 << 20)
                return (Int(response.status.code), (try? JSONSerialization.jsonObject(with: Data(buffer: bytes))) as? H.JSON ?? [:])
            }
            var ready = false
            for _ in 0..<300 where !ready {
                ready = (try? await call(.GET, "/readyz").0) == 200
                if !ready { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(ready, "the runner never became ready")
            // 40 words a delta of 5, 400 ms apart: a stage streams for about 3 s.
            let (status, created) = try await call(.POST, "/v1/pipelines", ["goal": "Crash me [delay-ms:400]", "unattended": true])
            #expect(status == 201, "\(created)")
            let id = try #require(created["pipelineId"] as? String)
            var running = false
            for _ in 0..<200 where !running {
                let (_, pipeline) = try await call(.GET, "/v1/pipelines/\(id)")
                running = H.stage(pipeline, 1)["status"] as? String == "running"
                if !running { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(running)
            kill(process.processIdentifier, SIGKILL)
            try await offPool { process.waitUntilExit() }
            #expect(process.terminationReason == .uncaughtSignal)
            try await http.shutdown()

            // Another runner, in process: it takes the pipeline once the dead one's lease (4 s) ran out.
            try await harness.live.application(PipelineRunnerService.self).test(.router) { second in
                let done = try await harness.waitFor(second, id, seconds: 60) { $0["status"] as? String == "completed" }
                #expect(H.stage(done, 1)["attempt"] as? Int == 2, "\(done)")
                let (_, artifacts) = try await LiveCall.call(second, .get, "/v1/pipelines/\(id)/artifacts", token: token)
                let list = artifacts["artifacts"] as? [H.JSON] ?? []
                #expect(list.map { $0["position"] as? Int } == [1, 2, 3], "\(list)")
                #expect(list.first?["attempt"] as? Int == 2)
            }
        }
    }
}

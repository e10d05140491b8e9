public import AnthropicLocal
import Approvals
public import Contracts
import ControlAPI
public import Foundation
public import Hummingbird
public import HummingbirdTesting
import Ingest
import Logging
import PipelineRunner
import ServiceKit
import StreamFanout
public import TestSupport
import Testing

/// Ingest, control-api, approvals and pipeline-runner (and stream-fanout when asked) against the
/// test NATS and Postgres, with names of their own (``LiveHarness``), and a local provider that
/// speaks the Messages API (``AnthropicLocalServer``) on a port of its own.
public struct PipelineHarness: Sendable {
    public typealias JSON = [String: Any]
    public typealias Client = any TestClientProtocol

    public var live: LiveHarness
    public let provider: AnthropicLocalServer
    public let keyFile: URL
    public var tenant: String { self.live.tenant }

    public init(_ overrides: [String: String] = [:], key: String? = "sk-ant-local-test") async throws {
        let provider = try await AnthropicLocalServer.start(apiKeys: ["sk-ant-local-test"], logger: Logger(label: "anthropic-local"))
        self.provider = provider
        self.keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("swarmdeck-anthropic-\(UUID().uuidString)")
        var environment = [
            "PIPELINE_ANTHROPIC_BASE_URL": provider.baseURL,
            "PIPELINE_ANTHROPIC_API_KEY_FILE": "",
            "PIPELINE_LEASE_SECONDS": "4",
            "PIPELINE_OUTPUT_EVENTS_PER_SECOND": "20",
        ]
        if let key {
            try Data(key.utf8).write(to: self.keyFile)
            environment["PIPELINE_ANTHROPIC_API_KEY_FILE"] = self.keyFile.path
        }
        environment.merge(overrides) { $1 }
        self.live = try await LiveHarness(overrides: environment)
        self.live.overrides["PIPELINE_SCHEMA"] = self.live.serviceSchema + "_pl"
    }

    public func stop() async {
        await self.provider.stop()
        try? FileManager.default.removeItem(at: self.keyFile)
    }

    /// The services: `body` gets their test clients (ingest, control-api, approvals, pipeline-runner).
    @discardableResult
    public func run<Value: Sendable>(
        _ mode: TestingSetup = .router,
        runner extra: [String: String] = [:],
        _ body: @escaping @Sendable (Client, Client, Client, Client) async throws -> Value
    ) async throws -> Value {
        try await self.infrastructure(mode) { ingest, control, approvals in
            try await self.live.withStack([PipelineRunnerService.self], mode, extra: [PipelineRunnerService.name: extra]) { stack in
                try await body(ingest, control, approvals, stack[PipelineRunnerService.self])
            }
        }
    }

    /// Ingest, control-api and approvals only (the tenant's ingest key made): for a runner
    /// started otherwise (an executable, or later in the test).
    public func runInfrastructure(_ body: @escaping @Sendable (Client, Client, Client) async throws -> Void) async throws {
        try await self.infrastructure(.router, body)
    }

    private func infrastructure<Value: Sendable>(
        _ mode: TestingSetup,
        _ body: @Sendable (Client, Client, Client) async throws -> Value
    ) async throws -> Value {
        try await self.live.withStack([IngestService.self, ControlAPIService.self, ApprovalsService.self], mode) { stack in
            // The tenant's log exists once it has an ingest key.
            _ = try await self.live.createKey(stack[IngestService.self])
            return try await body(stack[IngestService.self], stack[ControlAPIService.self], stack[ApprovalsService.self])
        }
    }

    /// The same with stream-fanout, every one live on a port of its own.
    public func runWithStream(_ body: @escaping @Sendable (Client, Client, Client, Client, Client) async throws -> Void) async throws {
        try await self.run(.live) { ingest, control, approvals, pipelines in
            try await self.live.withStack([StreamFanoutService.self], .live) { stack in
                try await body(ingest, control, approvals, pipelines, stack[StreamFanoutService.self])
            }
        }
    }

    public func token(tenant: String? = nil, scopes: Set<Scope> = [.agentsControl, .streamRead, .approvalsDecide]) async throws -> String {
        try await self.live.token(tenant: tenant, subject: "operator", scopes: scopes)
    }

    /// Creates a pipeline; the status and the answer.
    public func create(_ pipelines: Client, _ body: JSON, tenant: String? = nil) async throws -> (HTTPResponse.Status, JSON) {
        try await LiveCall.call(pipelines, .post, "/v1/pipelines", token: try await self.token(tenant: tenant), json: body)
    }

    public func pipeline(_ pipelines: Client, _ id: String) async throws -> JSON {
        let (status, pipeline) = try await LiveCall.call(pipelines, .get, "/v1/pipelines/\(id)", token: try await self.token())
        #expect(status == .ok, "reading \(id): \(status) \(pipeline)")
        return pipeline
    }

    /// Reads the pipeline until `done` holds (or `seconds` pass): the last read.
    public func waitFor(_ pipelines: Client, _ id: String, seconds: Double = 30, _ done: (JSON) -> Bool) async throws -> JSON {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var last: JSON = [:]
        while ContinuousClock.now < deadline {
            last = try await self.pipeline(pipelines, id)
            if done(last) { return last }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("pipeline \(id) did not get there in \(seconds) s: \(last)")
        return last
    }

    public static func stages(_ pipeline: JSON) -> [JSON] { pipeline["stages"] as? [JSON] ?? [] }

    public static func stage(_ pipeline: JSON, _ position: Int) -> JSON {
        Self.stages(pipeline).first { $0["position"] as? Int == position } ?? [:]
    }

    /// A person's decision on a gate through approvals.
    public func decide(_ approvals: Client, gate: String, approve: Bool, reason: String? = nil) async throws {
        var body: JSON = ["decision": approve ? "approve" : "reject", "decisionId": UUID().uuidString]
        if let reason { body["reason"] = reason }
        let (status, answer) = try await LiveCall.call(
            approvals,
            .post,
            "/v1/approval-gates/\(gate)/decision",
            token: try await self.token(),
            json: body
        )
        #expect(status == .ok, "deciding \(gate): \(status) \(answer)")
    }

    /// An operator's control of the pipeline's agent through control-api; the receipt's request id.
    @discardableResult
    public func control(_ control: Client, _ pipeline: String, _ action: String) async throws -> String {
        let requestID = UUID().uuidString
        var body: JSON = ["action": action, "reason": "test \(action)", "requestId": requestID]
        if action == "terminate" { body["confirm"] = "TERMINATE" }
        // The fleet learns the pipeline from its first state event: retry the 404 a moment.
        for _ in 0..<50 {
            let (status, answer) = try await LiveCall.call(
                control,
                .post,
                "/v1/agents/\(pipeline)/control",
                token: try await self.token(),
                json: body
            )
            if status == .accepted { return requestID }
            if status != .notFound {
                Issue.record("\(action) of \(pipeline): \(status) \(answer)")
                return requestID
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("\(action) of \(pipeline): the fleet never knew it")
        return requestID
    }

}

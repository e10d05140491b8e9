import Approvals
public import Contracts
import ControlAPI
public import Foundation
import Hummingbird
public import HummingbirdTesting
import Ingest
import ServiceKit
import StreamFanout
public import TestSupport
import Testing

/// Ingest, control-api and approvals (and stream-fanout when asked) against the test NATS and
/// Postgres, with names of their own (``LiveHarness``).
public struct ApprovalsHarness: Sendable {
    public typealias JSON = [String: Any]

    public var live: LiveHarness
    public var tenant: String { self.live.tenant }
    public var prefix: String { self.live.prefix }

    public init(_ overrides: [String: String] = [:]) async throws {
        self.live = try await LiveHarness(overrides: overrides)
    }

    /// The three services: `body` gets their test clients (ingest, control-api, approvals).
    @discardableResult
    public func run<Value: Sendable>(
        _ mode: TestingSetup = .router,
        _ body: @escaping @Sendable (any TestClientProtocol, any TestClientProtocol, any TestClientProtocol) async throws -> Value
    ) async throws -> Value {
        try await self.live.withStack([IngestService.self, ControlAPIService.self, ApprovalsService.self], mode) { stack in
            try await body(stack[IngestService.self], stack[ControlAPIService.self], stack[ApprovalsService.self])
        }
    }

    /// The same with stream-fanout, every one live on a port of its own.
    public func runWithStream(
        _ body:
            @escaping @Sendable (any TestClientProtocol, any TestClientProtocol, any TestClientProtocol, any TestClientProtocol) async throws -> Void
    ) async throws {
        try await self.live.withStack([IngestService.self, ControlAPIService.self, ApprovalsService.self, StreamFanoutService.self], .live) {
            stack in
            try await body(stack[IngestService.self], stack[ControlAPIService.self], stack[ApprovalsService.self], stack[StreamFanoutService.self])
        }
    }

    public func token(tenant: String? = nil, subject: String = "phone", scopes: Set<Scope> = [.approvalsDecide, .streamRead]) async throws -> String {
        try await self.live.token(tenant: tenant, subject: subject, scopes: scopes)
    }

    /// An ingest key, then an agent session of `agent` (its token).
    public func session(
        _ ingest: any TestClientProtocol,
        _ control: any TestClientProtocol,
        swarm: String = "s1",
        agent: String,
        tenant: String? = nil
    ) async throws
        -> String
    {
        let key = try await self.live.createKey(ingest, tenant: tenant)
        let (status, session) = try await LiveCall.call(control, .post, "/v1/agent/sessions", token: key, json: ["swarmId": swarm, "agentId": agent])
        #expect(status == .created, "opening a session for \(agent): \(status) \(session)")
        return try #require(session["token"] as? String)
    }

    /// Opens a gate with an agent session; answers its id.
    public static func open(
        _ approvals: any TestClientProtocol,
        session: String,
        key: String = UUID().uuidString,
        _ extra: JSON = [:]
    ) async throws -> String {
        var body: JSON = ["idempotencyKey": key, "summary": "rm -rf build", "tool": "Bash", "toolInput": ["command": "rm -rf build"]]
        body.merge(extra) { $1 }
        let (status, gate) = try await LiveCall.call(approvals, .post, "/v1/agent/gates", token: session, json: body)
        #expect(status == .created, "opening a gate: \(status) \(gate)")
        return try #require(gate["gateId"] as? String)
    }

    /// The commands the agent's poll gets within `wait` seconds.
    public static func poll(_ control: any TestClientProtocol, session: String, wait: Int = 10) async throws -> [JSON] {
        let (status, list) = try await LiveCall.call(control, .get, "/v1/agent/commands?waitSeconds=\(wait)", token: session)
        #expect(status == .ok)
        return list["commands"] as? [JSON] ?? []
    }

    /// Polls until a `gate` command arrives (acknowledging it), or nil after `attempts` polls.
    public static func gateOutcome(_ control: any TestClientProtocol, session: String, attempts: Int = 3) async throws -> JSON? {
        for _ in 0..<attempts {
            for command in try await Self.poll(control, session: session) where command["action"] as? String == "gate" {
                let (status, _) = try await LiveCall.call(
                    control,
                    .post,
                    "/v1/agent/commands/ack",
                    token: session,
                    json: ["commandId": command["commandId"]!, "ackToken": command["ackToken"]!, "outcome": "applied", "state": "running"]
                )
                #expect(status == .noContent)
                return command["gate"] as? JSON
            }
        }
        return nil
    }
}

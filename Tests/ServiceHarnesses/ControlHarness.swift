import Configuration
public import Contracts
import ControlAPI
public import Foundation
public import Hummingbird
public import HummingbirdTesting
import Ingest
import NIOCore
import PostgresNIO
public import ServiceKit
import StreamFanout
public import TestSupport
import Testing

/// Ingest and control-api against the test NATS and Postgres, with schemas, a subject prefix,
/// a tenant and a signing key of their own (``LiveHarness``).
public struct ControlHarness: Sendable {
    public typealias JSON = [String: Any]

    public var live: LiveHarness
    public var ingestSchema: String { self.live.ingestSchema }
    public var controlSchema: String { self.live.serviceSchema + "_ctl" }
    public var prefix: String { self.live.prefix }
    public var tenant: String { self.live.tenant }
    /// The private key's PEM file (the services verify with `<path>.pub`).
    public var keyFile: URL { self.live.keyFile }
    public var signer: AccessTokenSigner { self.live.signer }

    public init(_ overrides: [String: String] = [:]) async throws {
        self.live = try await LiveHarness(overrides: overrides)
    }

    public func environment() throws -> [String: String] {
        try self.live.environment()
    }

    /// The agents' command queues in use: control-api's rows, one per agent with an open session
    /// (released ones, kept a day for the agent's next session, are not counted).
    public func commandQueues() async throws -> Int {
        Int(try await self.controlNumber("SELECT count(*)::int8 FROM \(unescaped: self.controlSchema).agent_queues WHERE released_at IS NULL"))
    }

    /// The released queues of the harness's tenant (kept a day for their agents' next sessions).
    public func releasedQueues() async throws -> Int {
        Int(
            try await self.controlNumber(
                "SELECT count(*)::int8 FROM \(unescaped: self.controlSchema).agent_queues WHERE tenant_id = \(self.tenant) AND released_at IS NOT NULL"
            )
        )
    }

    /// The floor of `agent`'s queue in the harness's tenant (every command at or below that
    /// stream sequence done); -1 when it has no queue.
    public func agentQueueFloor(agent: String) async throws -> Int64 {
        try await self.controlNumber(
            "SELECT floor FROM \(unescaped: self.controlSchema).agent_queues WHERE tenant_id = \(self.tenant) AND agent_id = \(agent)"
        )
    }

    /// The deliveries recorded above `agent`'s floor (in flight or done out of order).
    public func agentDeliveries(agent: String) async throws -> Int {
        Int(
            try await self.controlNumber(
                "SELECT count(*)::int8 FROM \(unescaped: self.controlSchema).agent_deliveries WHERE tenant_id = \(self.tenant) AND agent_id = \(agent)"
            )
        )
    }

    /// The one number a query of control-api's tables answers; -1 when it answers no row.
    private func controlNumber(_ query: PostgresQuery) async throws -> Int64 {
        try await self.live.withDatabase { database in
            var number: Int64 = -1
            for try await value in try await database.query(query).decode(Int64.self) { number = value }
            return number
        }
    }

    /// An agent session's poll (waiting up to `wait` seconds) with each command it gets
    /// acknowledged as `applied` in `state`: the commands' request ids.
    public static func pollAndAcknowledge(
        _ control: any TestClientProtocol,
        session: String,
        wait: Int,
        state: String = "running"
    ) async throws -> (status: HTTPResponse.Status, requestIDs: [String]) {
        let (status, list) = try await Self.call(control, .get, "/v1/agent/commands?waitSeconds=\(wait)", token: session)
        var requestIDs: [String] = []
        for command in list["commands"] as? [[String: Any]] ?? [] {
            requestIDs.append(try #require(command["requestId"] as? String))
            let ack: [String: Any] = [
                "commandId": try #require(command["commandId"] as? String), "ackToken": try #require(command["ackToken"] as? String),
                "outcome": "applied", "state": state,
            ]
            let (acked, body) = try await Self.call(control, .post, "/v1/agent/commands/ack", token: session, json: ack)
            #expect(acked == .noContent, "\(body)")
        }
        return (status, requestIDs)
    }

    /// The consumers JetStream holds on the harness's control stream (the agents' queues are
    /// none of them), on the test's NATS or the server at `natsURL`.
    public func controlStreamConsumers(natsURL: String? = nil) async throws -> Int {
        let connection =
            if let natsURL {
                try await NATSConnection.connect(NATSConfiguration(servers: [natsURL], name: "harness"))
            } else {
                try await TestEnvironment.connect()
            }
        defer { Task { await connection.drain() } }
        let info = try await JetStream(connection: connection).streamInfo(Subjects(prefix: self.prefix).controlStreamName)
        return info.state.consumerCount ?? -1
    }

    /// The swarms in which `agent` has an open agent session (where its connector takes
    /// commands), read from control-api's table.
    public func openSessionSwarms(agent: String) async throws -> [String] {
        try await self.live.withDatabase { database in
            var swarms: [String] = []
            let rows = try await database.query(
                "SELECT swarm_id FROM \(unescaped: self.controlSchema).agent_sessions WHERE tenant_id = \(self.tenant) AND agent_id = \(agent) AND ended_at IS NULL"
            )
            for try await swarm in rows.decode(String.self) { swarms.append(swarm) }
            return swarms
        }
    }

    public func control() async throws -> some ApplicationProtocol {
        try await self.live.application(ControlAPIService.self)
    }

    /// Both, in this process: `body` gets their test clients.
    @discardableResult
    public func run<Value: Sendable>(
        _ mode: TestingSetup = .router,
        _ body: @escaping @Sendable (any TestClientProtocol, any TestClientProtocol) async throws -> Value
    ) async throws -> Value {
        try await self.live.withStack([IngestService.self, ControlAPIService.self], mode) { stack in
            try await body(stack[IngestService.self], stack[ControlAPIService.self])
        }
    }

    /// Ingest, control-api and stream-fanout live on ports of their own (for a connector
    /// process and a WebSocket client): `body` gets their test clients.
    public func runWithStream(
        _ body: @escaping @Sendable (any TestClientProtocol, any TestClientProtocol, any TestClientProtocol) async throws -> Void
    ) async throws {
        try await self.live.withStack([IngestService.self, ControlAPIService.self, StreamFanoutService.self], .live) { stack in
            try await body(stack[IngestService.self], stack[ControlAPIService.self], stack[StreamFanoutService.self])
        }
    }

    public func token(tenant: String? = nil, subject: String = "operator", scopes: Set<Scope> = Set(Scope.allCases)) async throws -> String {
        try await self.live.token(tenant: tenant, subject: subject, scopes: scopes)
    }

    /// An ingest key for `tenant`, through ingest's admin API.
    public func createKey(_ ingest: any TestClientProtocol, tenant: String? = nil) async throws -> String {
        try await self.live.createKey(ingest, tenant: tenant)
    }

    /// Posts native events (again after a 503: ``LiveHarness/postEventsRetrying(_:key:_:)``);
    /// fails the test unless they are all accepted (after a 503, each accepted or a duplicate of
    /// what that attempt had stored).
    public func post(_ ingest: any TestClientProtocol, key: String, _ events: [JSON]) async throws {
        let (status, body, retried) = try await self.live.postEventsRetrying(ingest, key: key, events)
        let object = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? JSON ?? [:]
        #expect(status == .ok, "posting events: \(status) \(String(buffer: body))")
        let stored = (object["accepted"] as? Int ?? 0) + (retried ? object["duplicates"] as? Int ?? 0 : 0)
        #expect(stored == events.count, "\(object)")
    }

    /// Makes `agent` of `swarm` known (a state event), and waits until control-api sees it.
    public func announce(
        _ ingest: any TestClientProtocol,
        _ control: any TestClientProtocol,
        key: String,
        agent: String,
        swarm: String,
        state: String = "running"
    ) async throws {
        try await self.post(ingest, key: key, [Self.state(agent: agent, swarm: swarm, state: state)])
        let token = try await self.token(tenant: self.tenant, scopes: [.streamRead])
        let seen = try await eventually {
            try await Self.call(control, .get, "/v1/agents/\(agent)", token: token).0 == .ok
        }
        #expect(seen, "control-api never saw \(agent)")
    }

    /// Opens `agent`'s command channel with the ingest key; answers the session token. With
    /// `retryingUnavailable`, a 503 is retried as a connector does (``LiveCall/retryingUnavailable(within:_:)``):
    /// for tests that open many sessions of one tenant at once, which its session lock serializes.
    public static func openSession(
        _ control: any TestClientProtocol,
        key: String,
        swarm: String,
        agent: String,
        retryingUnavailable: Bool = false
    ) async throws -> String {
        let open = { try await Self.call(control, .post, "/v1/agent/sessions", token: key, json: ["swarmId": swarm, "agentId": agent]) }
        let (status, session) = retryingUnavailable ? try await LiveCall.retryingUnavailable(open) : try await open()
        #expect(status == .created, "opening a session for \(agent): \(status) \(session)")
        return try #require(session["token"] as? String)
    }

    public static func state(agent: String, swarm: String, state: String) -> JSON {
        ["msgId": "state-\(UUID().uuidString)", "swarmId": swarm, "agentId": agent, "kind": "state", "state": state]
    }

    /// One JSON call: the status and the body as an object (``LiveCall/call(_:_:_:token:json:body:headers:)``).
    @discardableResult
    public static func call(
        _ client: any TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        token: String? = nil,
        json: Any? = nil,
        body: String? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> (HTTPResponse.Status, JSON) {
        try await LiveCall.call(client, method, uri, token: token, json: json, body: body, headers: extra)
    }

    /// The raw body of a call (``LiveCall/raw(_:_:_:token:body:)``).
    public static func raw(
        _ client: any TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        token: String,
        body: String
    ) async throws -> (
        HTTPResponse.Status, String
    ) {
        try await LiveCall.raw(client, method, uri, token: token, body: body)
    }
}

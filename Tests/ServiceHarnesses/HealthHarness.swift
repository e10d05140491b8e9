public import Contracts
import ControlAPI
import Foundation
import HealthMonitor
public import Hummingbird
public import HummingbirdTesting
import Ingest
import ServiceKit
import StreamFanout
public import TestSupport
import Testing

/// Ingest, control-api and health-monitor (and stream-fanout when asked) against the test NATS
/// and Postgres, with names of their own (``LiveHarness``). Health samples every second,
/// evaluates every 200 ms and writes rollups every second, so a test sees changes quickly.
public struct HealthHarness: Sendable {
    public typealias JSON = [String: Any]

    public var live: LiveHarness
    public var tenant: String { self.live.tenant }

    public static let fast = [
        "HEALTH_SAMPLE_SECONDS": "1", "HEALTH_ROLLUP_SECONDS": "1", "HEALTH_EVALUATE_MILLISECONDS": "200", "HEALTH_METRIC_SECONDS": "1",
    ]

    public init(_ overrides: [String: String] = [:]) async throws {
        self.live = try await LiveHarness(overrides: Self.fast.merging(overrides) { $1 })
    }

    /// The three services: `body` gets their test clients (ingest, control-api, health-monitor).
    @discardableResult
    public func run<Value: Sendable>(
        _ mode: TestingSetup = .live,
        _ body: @escaping @Sendable (any TestClientProtocol, any TestClientProtocol, any TestClientProtocol) async throws -> Value
    ) async throws -> Value {
        try await self.live.withStack([IngestService.self, ControlAPIService.self, HealthMonitorService.self], mode) { stack in
            try await body(stack[IngestService.self], stack[ControlAPIService.self], stack[HealthMonitorService.self])
        }
    }

    /// Health-monitor alone (another start of it, on the same schema).
    public func health(_ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        try await self.live.application(HealthMonitorService.self).test(.live, body)
    }

    public func token(tenant: String? = nil, scopes: Set<Scope> = [.streamRead, .agentsControl]) async throws -> String {
        try await self.live.token(tenant: tenant, scopes: scopes)
    }

    /// Posts native events with `key` (each with a fresh msgId, again after a 503:
    /// ``LiveHarness/postEventsRetrying(_:key:_:)``); expects them accepted.
    public func post(_ ingest: any TestClientProtocol, key: String, _ events: [JSON]) async throws {
        let (status, body, _) = try await self.live.postEventsRetrying(ingest, key: key, events)
        #expect(status == .accepted || status == .ok, "posting events: \(status) \(String(buffer: body))")
    }

    public static func get(_ client: any TestClientProtocol, _ path: String, token: String) async throws -> (HTTPResponse.Status, JSON) {
        try await LiveCall.call(client, .get, path, token: token)
    }

    /// The tenant's incidents of `status` (firing by default).
    public static func incidents(_ health: any TestClientProtocol, token: String, status: String = "firing") async throws -> [JSON] {
        let (status, page) = try await Self.get(health, "/v1/incidents?status=\(status)", token: token)
        #expect(status == .ok)
        return page["incidents"] as? [JSON] ?? []
    }

    /// Waits (up to `timeout`) for an incident of `rule` in `status`; nil if none came.
    public static func incident(
        _ health: any TestClientProtocol,
        token: String,
        rule: String,
        status: String = "firing",
        timeout: Duration = .seconds(20),
        where match: @escaping @Sendable (JSON) -> Bool = { _ in true }
    ) async throws -> JSON? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = try await Self.incidents(health, token: token, status: status).first(where: { $0["rule"] as? String == rule && match($0) })
            {
                return found
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        return nil
    }

    /// Sets thresholds (the tenant's, or a swarm's or skill's with `extra`).
    public static func setThresholds(_ health: any TestClientProtocol, token: String, _ values: JSON, extra: JSON = [:]) async throws {
        var body: JSON = ["values": values]
        body.merge(extra) { $1 }
        let (status, answer) = try await LiveCall.call(health, .put, "/v1/alert-thresholds", token: token, json: body)
        #expect(status == .ok, "PUT /v1/alert-thresholds: \(status) \(answer)")
    }
}

import Configuration
import Contracts
public import Foundation
public import Hummingbird
public import HummingbirdTesting
import Ingest
public import PostgresNIO
public import ServiceKit
public import TestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Ingest in process against the test infrastructure, with a schema, subject prefix and tenant
/// of its own (``LiveHarness``).
public struct IngestHarness: Sendable {
    /// Another build's executable to test instead (`$SWARMDECK_TEST_INGEST_EXECUTABLE`: its
    /// `swarmdeckd`, or its `ingest` from before swarmdeckd), or nil for this build's.
    public static var otherExecutable: URL? {
        ProcessInfo.processInfo.environment["SWARMDECK_TEST_INGEST_EXECUTABLE"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
    }

    /// The real executable (`swarmdeckd ingest`, or ``otherExecutable``) on a port of its own
    /// with the harness's environment, once it is ready: the process (the caller kills it),
    /// its base URL and a new ingest key of the harness's tenant.
    public func startExecutable() async throws -> (process: Process, base: String, key: String) {
        let port = try freeLoopbackPort()
        let process = Swarmdeckd.process("ingest", executable: Self.otherExecutable)
        var environment = try self.environment
        environment["HTTP_PORT"] = String(port)
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let base = "http://127.0.0.1:\(port)"
        guard try await Self.waitReady(base) else {
            kill(process.processIdentifier, SIGKILL)
            throw HarnessError(message: "ingest at \(base) was not ready within 30 s")
        }
        return (process, base, try await Self.createKey(base: base, token: try await self.adminToken()))
    }

    /// Waits (up to 30 s) until the ingest at `base` is ready.
    public static func waitReady(_ base: String) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let (_, response) = try? await URLSession.shared.data(from: URL(string: base + "/readyz")!),
                (response as? HTTPURLResponse)?.statusCode == 200
            {
                return true
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// A new ingest key through the admin API of the ingest at `base`.
    public static func createKey(base: String, token: String) async throws -> String {
        var request = URLRequest(url: URL(string: base + "/v1/admin/ingest-keys")!)
        request.httpMethod = "POST"
        request.httpBody = Data(#"{"name":"crash test"}"#.utf8)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let (data, _) = try await URLSession.shared.data(for: request)
        return try JSONDecoder().decode(CreatedKey.self, from: data).key
    }

    private struct CreatedKey: Decodable {
        var key: String
    }

    public var live: LiveHarness
    public var schema: String { self.live.ingestSchema }
    public var prefix: String { self.live.prefix }
    public var tenant: String { self.live.tenant }
    public var signer: AccessTokenSigner { self.live.signer }

    public init(overrides: [String: String] = [:]) async throws {
        self.live = try await LiveHarness(overrides: overrides)
    }

    public var environment: [String: String] {
        get throws { try self.live.environment() }
    }

    public func application() async throws -> some ApplicationProtocol {
        try await self.live.application(IngestService.self)
    }

    public func adminToken(tenant: String? = nil) async throws -> String {
        try await self.live.token(tenant: tenant, subject: "admin", scopes: [.admin])
    }

    /// Creates an ingest key through the admin API.
    public func createKey(_ client: some TestClientProtocol, tenant: String? = nil) async throws -> String {
        try await self.live.createKey(client, tenant: tenant)
    }

    /// Runs `body` with a Postgres client of its own whose unqualified names resolve to the
    /// test's schema.
    public func withDatabase<T: Sendable>(_ body: (PostgresClient) async throws -> T) async throws -> T {
        try await self.live.withDatabase(body)
    }

    /// Posts a native batch and decodes the answer.
    public func post(_ client: some TestClientProtocol, key: String, events: [[String: Any]]) async throws -> (HTTPResponse.Status, BatchAnswer?) {
        let (status, body) = try await self.live.postEvents(client, key: key, events)
        return (status, try? JSONDecoder().decode(BatchAnswer.self, from: Data(buffer: body)))
    }

    /// ``post(_:key:events:)`` retried while it answers 503, as a client does
    /// (``LiveHarness/postEventsRetrying(_:key:_:)``: the same msgIds, a second apart, up to a
    /// minute): what an attempt refused after its commit stored answers `duplicate`, and
    /// `retried` says whether that could be. Not for a test that holds the log on purpose: it
    /// would wait the minute out.
    public func postRetrying(
        _ client: some TestClientProtocol,
        key: String,
        events: [[String: Any]]
    ) async throws -> (status: HTTPResponse.Status, answer: BatchAnswer?, retried: Bool) {
        let (status, body, retried) = try await self.live.postEventsRetrying(client, key: key, events)
        return (status, try? JSONDecoder().decode(BatchAnswer.self, from: Data(buffer: body)), retried)
    }
}

public struct BatchAnswer: Decodable {
    public struct Result: Decodable {
        public var msgId: String?
        public var status: String
        public var seq: Int64?
        public var reason: String?
    }

    public var accepted: Int
    public var duplicates: Int
    public var rejected: Int
    public var results: [Result]
}

public func logEvent(_ msgID: String, swarm: String = "s1", agent: String = "a1", level: String = "info", message: String = "hello") -> [String: Any]
{
    ["msgId": msgID, "swarmId": swarm, "agentId": agent, "kind": "log", "level": level, "message": message]
}

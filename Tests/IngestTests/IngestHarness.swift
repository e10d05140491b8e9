import Configuration
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import Ingest

/// Ingest in process against the test infrastructure, with a schema, subject prefix and tenant
/// of its own (``LiveHarness``).
struct IngestHarness {
    var live: LiveHarness
    var schema: String { self.live.ingestSchema }
    var prefix: String { self.live.prefix }
    var tenant: String { self.live.tenant }
    var signer: AccessTokenSigner { self.live.signer }

    init(overrides: [String: String] = [:]) async throws {
        self.live = try await LiveHarness(overrides: overrides)
    }

    var environment: [String: String] {
        get throws { try self.live.environment() }
    }

    func application() async throws -> some ApplicationProtocol {
        try await self.live.application(IngestService.self)
    }

    func adminToken(tenant: String? = nil) async throws -> String {
        try await self.live.token(tenant: tenant, subject: "admin", scopes: [.admin])
    }

    /// Creates an ingest key through the admin API.
    func createKey(_ client: some TestClientProtocol, tenant: String? = nil) async throws -> String {
        try await self.live.createKey(client, tenant: tenant)
    }

    /// Runs `body` with a Postgres client of its own whose unqualified names resolve to the
    /// test's schema.
    func withDatabase<T: Sendable>(_ body: (PostgresClient) async throws -> T) async throws -> T {
        try await self.live.withDatabase(body)
    }

    /// Posts a native batch and decodes the answer.
    func post(_ client: some TestClientProtocol, key: String, events: [[String: Any]]) async throws -> (HTTPResponse.Status, BatchAnswer?) {
        let (status, body) = try await self.live.postEvents(client, key: key, events)
        return (status, try? JSONDecoder().decode(BatchAnswer.self, from: Data(buffer: body)))
    }
}

struct BatchAnswer: Decodable {
    struct Result: Decodable {
        var msgId: String?
        var status: String
        var seq: Int64?
        var reason: String?
    }

    var accepted: Int
    var duplicates: Int
    var rejected: Int
    var results: [Result]
}

func logEvent(_ msgID: String, swarm: String = "s1", agent: String = "a1", message: String = "hello") -> [String: Any] {
    ["msgId": msgID, "swarmId": swarm, "agentId": agent, "kind": "log", "level": "info", "message": message]
}

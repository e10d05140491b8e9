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

/// Builds the ingest application against the test infrastructure with its own schema and
/// subject prefix, and signs admin tokens for it.
struct IngestHarness {
    let schema = "ingest_" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
    let prefix = "t" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
    let tenant = "tenant-" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
    let keyFile: URL
    let signer: AccessTokenSigner
    var overrides: [String: String] = [:]

    init(overrides: [String: String] = [:]) async throws {
        let pair = AccessTokenSigner.generateKeyPair()
        self.keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-test-\(UUID().uuidString).pub")
        try Data(pair.publicKey.utf8).write(to: self.keyFile)
        self.signer = try await AccessTokenSigner(privateKeyPEM: pair.privateKey, keyID: "swarmdeck-1", issuer: "swarmdeck", audience: "swarmdeck")
        self.overrides = overrides
    }

    var environment: [String: String] {
        get throws {
            var environment = [
                "NATS_URL": try TestEnvironment.natsURL,
                "POSTGRES_URL": try TestEnvironment.databaseURL,
                "POSTGRES_MAX_CONNECTIONS": "8",
                "INGEST_SCHEMA": self.schema,
                "SUBJECTS_PREFIX": self.prefix,
                "AUTH_JWT_PUBLIC_KEY_FILE": self.keyFile.path,
                "LOG_LEVEL": "warning",
            ]
            environment.merge(self.overrides) { $1 }
            return environment
        }
    }

    func application() async throws -> some ApplicationProtocol {
        try await IngestService.application(reader: try await ServiceConfiguration.reader(arguments: ["ingest"], environment: self.environment))
    }

    func adminToken(tenant: String? = nil) async throws -> String {
        try await self.signer.sign(tenant: tenant ?? self.tenant, subject: "admin", scopes: [.admin])
    }

    /// Creates an ingest key through the admin API.
    func createKey(_ client: some TestClientProtocol, tenant: String? = nil) async throws -> String {
        let token = try await self.adminToken(tenant: tenant)
        return try await client.execute(
            uri: "/v1/admin/ingest-keys",
            method: .post,
            headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
            body: ByteBuffer(string: #"{"name":"test"}"#)
        ) { response in
            #expect(response.status == .created)
            return try JSONDecoder().decode(CreatedKey.self, from: Data(buffer: response.body)).key
        }
    }

    /// Runs `body` with a Postgres client of its own whose unqualified names resolve to the
    /// test's schema.
    func withDatabase<T: Sendable>(_ body: (PostgresClient) async throws -> T) async throws -> T {
        var configuration = try PostgresClient.Configuration(url: try self.environment["POSTGRES_URL"]!, maxConnections: 2)
        configuration.options.additionalStartupParameters = [("search_path", self.schema)]
        let client = PostgresClient(configuration: configuration)
        let running = Task { await client.run() }
        defer { running.cancel() }
        return try await body(client)
    }

    /// Posts a native batch and decodes the answer.
    func post(_ client: some TestClientProtocol, key: String, events: [[String: Any]]) async throws -> (HTTPResponse.Status, BatchAnswer?) {
        let body = try JSONSerialization.data(withJSONObject: ["events": events])
        return try await client.execute(
            uri: "/v1/ingest/events",
            method: .post,
            headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(bytes: body)
        ) { response in
            (response.status, try? JSONDecoder().decode(BatchAnswer.self, from: Data(buffer: response.body)))
        }
    }
}

struct CreatedKey: Decodable {
    var key: String
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

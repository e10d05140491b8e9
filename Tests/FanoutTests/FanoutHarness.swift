import Configuration
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import Ingest
import Logging
import NIOCore
import ServiceKit
import StreamTestSupport
import Synchronization
import TestSupport
import Testing

@testable import StreamFanout

/// Ingest and stream-fanout in this process, against the test NATS and Postgres, sharing a
/// schema (ingest's event log) and a subject prefix of their own.
struct FanoutHarness {
    typealias Frame = [String: Any]

    let schema = "fan_" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
    let prefix = "f" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
    let tenant = "tenant-" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
    let keyFile: URL
    let signer: AccessTokenSigner
    var fanoutOverrides: [String: String]

    init(fanout overrides: [String: String] = [:]) async throws {
        let pair = AccessTokenSigner.generateKeyPair()
        self.keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-test-\(UUID().uuidString).pub")
        try Data(pair.publicKey.utf8).write(to: self.keyFile)
        self.signer = try await AccessTokenSigner(privateKeyPEM: pair.privateKey, keyID: "swarmdeck-1", issuer: "swarmdeck", audience: "swarmdeck")
        self.fanoutOverrides = overrides
    }

    func environment(prefix: String? = nil) throws -> [String: String] {
        [
            "NATS_URL": try TestEnvironment.natsURL,
            "POSTGRES_URL": try TestEnvironment.databaseURL,
            "POSTGRES_MAX_CONNECTIONS": "8",
            "INGEST_SCHEMA": self.schema,
            "FANOUT_EVENT_LOG_SCHEMA": self.schema,
            "SUBJECTS_PREFIX": prefix ?? self.prefix,
            "AUTH_JWT_PUBLIC_KEY_FILE": self.keyFile.path,
            "LOG_LEVEL": "warning",
        ]
    }

    /// Ingest; with another `prefix`, its publishes never reach this fanout (lost publishes).
    func ingest(prefix: String? = nil) async throws -> some ApplicationProtocol {
        try await IngestService.application(reader: try await ServiceConfiguration.reader(arguments: ["ingest"], environment: try self.environment(prefix: prefix)))
    }

    func fanout() async throws -> some ApplicationProtocol {
        var environment = try self.environment()
        environment.merge(self.fanoutOverrides) { $1 }
        return try await StreamFanoutService.application(reader: try await ServiceConfiguration.reader(arguments: ["stream-fanout"], environment: environment))
    }

    func token(tenant: String? = nil, subject: String = "phone", scopes: Set<Scope> = [.streamRead]) async throws -> String {
        try await self.signer.sign(tenant: tenant ?? self.tenant, subject: subject, scopes: scopes)
    }

    /// Posts one ACP message (its exact bytes) to `thread`.
    func postACP(_ ingest: some TestClientProtocol, key: String, thread: String, body: String, msgID: String) async throws {
        try await ingest.execute(
            uri: "/v1/ingest/acp/\(thread)?swarmId=s1&agentId=a1&direction=agent_to_client&msgId=\(msgID)",
            method: .post,
            headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(string: body)
        ) { response in
            #expect(response.status == .ok)
        }
    }

    /// An ingest key for `tenant`, through ingest's admin API.
    func createKey(_ ingest: some TestClientProtocol, tenant: String? = nil) async throws -> String {
        let token = try await self.signer.sign(tenant: tenant ?? self.tenant, subject: "admin", scopes: [.admin])
        return try await ingest.execute(
            uri: "/v1/admin/ingest-keys",
            method: .post,
            headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
            body: ByteBuffer(string: #"{"name":"test"}"#)
        ) { response in
            let object = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
            return try #require(object?["key"] as? String)
        }
    }

    /// Posts native events; returns their seqs.
    @discardableResult
    func post(_ ingest: some TestClientProtocol, key: String, _ events: [[String: Any]]) async throws -> [Int64] {
        let body = try JSONSerialization.data(withJSONObject: ["events": events])
        return try await ingest.execute(
            uri: "/v1/ingest/events",
            method: .post,
            headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(bytes: body)
        ) { response in
            #expect(response.status == .ok)
            let object = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
            let results = object?["results"] as? [[String: Any]] ?? []
            return results.compactMap { ($0["seq"] as? NSNumber)?.int64Value }
        }
    }
}

func log(_ id: String, agent: String = "a1", swarm: String = "s1", level: String = "info", message: String = "hello") -> [String: Any] {
    ["msgId": id, "swarmId": swarm, "agentId": agent, "kind": "log", "level": level, "message": message]
}

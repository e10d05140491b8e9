import Configuration
public import Contracts
import Foundation
public import Hummingbird
public import HummingbirdTesting
import Ingest
import Logging
import NIOCore
public import ServiceKit
import StreamFanout
import StreamTestSupport
import Synchronization
public import TestSupport
import Testing

/// Ingest and stream-fanout in this process, against the test NATS and Postgres, sharing a
/// schema (ingest's event log) and a subject prefix of their own (``LiveHarness``).
public struct FanoutHarness: Sendable {
    /// An ACP update of `n`, its spacing, escapes and non-ASCII to come back byte for byte.
    public static func acpBody(_ n: Int) -> String {
        // Odd spacing, escapes and non-ASCII: what comes back must be these exact bytes.
        #"{"jsonrpc":"2.0",  "method":"session/update","params":{"n":\#(n), "text":"caf\u00e9 é\n"}}"#
    }

    /// A JSON-RPC request of the ACP cache socket.
    public static func acpRequest(_ id: Int, _ method: String, _ params: [String: Any]) -> String {
        String(
            decoding: try! JSONSerialization.data(withJSONObject: ["jsonrpc": "2.0", "id": id, "method": method, "params": params]),
            as: UTF8.self
        )
    }

    public typealias Frame = [String: Any]

    public var live: LiveHarness
    public var schema: String { self.live.ingestSchema }
    public var prefix: String { self.live.prefix }
    public var tenant: String { self.live.tenant }
    public var signer: AccessTokenSigner { self.live.signer }
    public var fanoutOverrides: [String: String]

    public init(fanout overrides: [String: String] = [:]) async throws {
        self.live = try await LiveHarness()
        self.fanoutOverrides = overrides
    }

    public func environment(prefix: String? = nil) throws -> [String: String] {
        try self.live.environment(prefix: prefix)
    }

    /// Ingest; with another `prefix`, its publishes never reach this fanout (lost publishes).
    public func ingest(prefix: String? = nil) async throws -> some ApplicationProtocol {
        try await self.live.application(IngestService.self, prefix: prefix)
    }

    public func fanout() async throws -> some ApplicationProtocol {
        try await self.live.application(StreamFanoutService.self, extra: self.fanoutOverrides)
    }

    public func token(tenant: String? = nil, subject: String = "phone", scopes: Set<Scope> = [.streamRead]) async throws -> String {
        try await self.live.token(tenant: tenant, subject: subject, scopes: scopes)
    }

    /// Posts one ACP message (its exact bytes) to `thread`, again after a 503 or 429 as a client
    /// does (a loaded test Postgres can keep ingest's commit past its deadline; a message already
    /// stored comes back as a duplicate, 200).
    public func postACP(_ ingest: some TestClientProtocol, key: String, thread: String, body: String, msgID: String) async throws {
        var status = try await self.live.postACP(ingest, key: key, thread: thread, body: body, msgID: msgID)
        for _ in 0..<5 where [.serviceUnavailable, .tooManyRequests].contains(status) {
            try await Task.sleep(for: .seconds(1))
            status = try await self.live.postACP(ingest, key: key, thread: thread, body: body, msgID: msgID)
        }
        #expect(status == .ok)
    }

    /// An ingest key for `tenant`, through ingest's admin API.
    public func createKey(_ ingest: some TestClientProtocol, tenant: String? = nil) async throws -> String {
        try await self.live.createKey(ingest, tenant: tenant)
    }

    /// Posts native events; returns their seqs.
    @discardableResult
    public func post(_ ingest: some TestClientProtocol, key: String, _ events: [[String: Any]]) async throws -> [Int64] {
        // A 503 is retried with the same msgIds: the stored ones answer as duplicates, seqs and all.
        let (status, body, _) = try await self.live.postEventsRetrying(ingest, key: key, events)
        #expect(status == .ok)
        let object = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
        let results = object?["results"] as? [[String: Any]] ?? []
        return results.compactMap { ($0["seq"] as? NSNumber)?.int64Value }
    }
}

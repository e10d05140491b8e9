import Configuration
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import IngestTestSupport
import Logging
import NIOCore
import ServiceKit
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
        try await buildIngestApplication(reader: try await ServiceConfiguration.reader(arguments: ["ingest"], environment: try self.environment(prefix: prefix)))
    }

    func fanout() async throws -> some ApplicationProtocol {
        var environment = try self.environment()
        environment.merge(self.fanoutOverrides) { $1 }
        return try await buildApplication(reader: try await ServiceConfiguration.reader(arguments: ["stream-fanout"], environment: environment))
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

/// A WebSocket client of `/v1/stream` that sends `messages`, then collects frames until
/// `until` says so (or the server closes).
struct StreamClient {
    typealias Frame = [String: Any]

    final class Received: Sendable {
        let texts = Mutex<[String]>([])
    }

    var port: Int
    var token: String?
    var path = "/v1/stream"
    var protocolVersion: String? = "1"
    /// Answer the server's pings.
    var answerPings = true
    /// Wait this long before reading anything (a slow client).
    var readDelay: Duration?

    /// A message's frames: one object, or each of a batch (a JSON array of events).
    static func frames(_ text: String) -> [Frame] {
        let object = try? JSONSerialization.jsonObject(with: Data(text.utf8))
        if let batch = object as? [Frame] { return batch }
        return [object as? Frame ?? [:]]
    }

    var url: String {
        var query: [String] = []
        if let protocolVersion { query.append("protocol=\(protocolVersion)") }
        if let token { query.append("access_token=\(token)") }
        return "ws://127.0.0.1:\(self.port)\(self.path)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }

    /// The frames received, parsed, and how the connection was closed (nil: by us, or, with
    /// `toleratingDrop`, by the connection breaking).
    func run(
        sending messages: [String],
        timeout: Duration = .seconds(30),
        toleratingDrop: Bool = false,
        until: @escaping @Sendable (Frame) -> Bool
    ) async throws -> (frames: [Frame], close: WebSocketCloseFrame?, messages: Int) {
        let received = Received()
        do {
            return try await self.run(sending: messages, timeout: timeout, received: received, until: until)
        } catch where toleratingDrop && !(error is ServiceKitError) {
            let texts = received.texts.withLock { $0 }
            return (texts.flatMap(StreamClient.frames), nil, texts.count)
        }
    }

    private func run(
        sending messages: [String],
        timeout: Duration,
        received: Received,
        until: @escaping @Sendable (Frame) -> Bool
    ) async throws -> (frames: [Frame], close: WebSocketCloseFrame?, messages: Int) {
        let answerPings = self.answerPings
        let readDelay = self.readDelay
        let url = self.url
        let close = try await withHardDeadline(timeout, orThrow: ServiceKitError(.natsTimeout, "stream client timed out after \(timeout); got \(received.texts.withLock { $0.prefix(8) })")) {
            try await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 24), logger: Logger(label: "stream-client")) { inbound, outbound, _ in
                for message in messages { try await outbound.write(.text(message)) }
                if let readDelay { try await Task.sleep(for: readDelay) }
                for try await message in inbound.messages(maxSize: 1 << 24) {
                    guard case .text(let text) = message else { continue }
                    received.texts.withLock { $0.append(text) }
                    for frame in StreamClient.frames(text) {
                        if answerPings, frame["type"] as? String == "ping" {
                            try await outbound.write(.text(#"{"type":"pong"}"#))
                        }
                        if until(frame) { return }
                    }
                }
            }
        }
        let texts = received.texts.withLock { $0 }
        return (texts.flatMap(StreamClient.frames), close, texts.count)
    }
}

extension Array where Element == [String: Any] {
    /// The event frames (those with a seq), in order.
    var events: [[String: Any]] { self.filter { $0["seq"] != nil } }
    var seqs: [Int64] { self.events.compactMap { ($0["seq"] as? NSNumber)?.int64Value } }
    func ofType(_ type: String) -> [[String: Any]] { self.filter { $0["type"] as? String == type } }
}

func subscribe(lastEventId: Int64? = nil, filters: [String: Any]? = nil, requestID: String = "r1", extra: [String: Any] = [:]) -> String {
    var message: [String: Any] = ["type": "subscribe", "requestId": requestID]
    if let lastEventId { message["lastEventId"] = String(lastEventId) }
    if let filters { message["filters"] = filters }
    message.merge(extra) { $1 }
    return String(decoding: try! JSONSerialization.data(withJSONObject: message), as: UTF8.self)
}

/// Like ``withDeadline`` but it returns at the deadline even when `body` ignores cancellation
/// (a WebSocket handshake that never completes): a test fails instead of hanging. The body is
/// cancelled and left to end on its own.
func withHardDeadline<Result: Sendable>(
    _ timeout: Duration,
    orThrow timeoutError: @autoclosure @escaping @Sendable () -> any Error,
    _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    let once = OnceContinuation<Result>()
    var work: Task<Void, Never>?
    var timer: Task<Void, Never>?
    defer {
        work?.cancel()
        timer?.cancel()
    }
    return try await withCheckedThrowingContinuation { continuation in
        once.continuation.withLock { $0 = continuation }
        work = Task {
            do {
                once.finish(.success(try await body()))
            } catch {
                once.finish(.failure(error))
            }
        }
        timer = Task {
            try? await Task.sleep(for: timeout)
            once.finish(.failure(timeoutError()))
        }
    }
}

/// A continuation resumed by whoever comes first.
final class OnceContinuation<Value: Sendable>: Sendable {
    let continuation = Mutex<CheckedContinuation<Value, any Error>?>(nil)

    func finish(_ result: Result<Value, any Error>) {
        self.continuation.withLock { continuation in
            continuation?.resume(with: result)
            continuation = nil
        }
    }
}

public import Contracts
import Foundation
import Hummingbird
public import HummingbirdTesting
import Logging
import NIOConcurrencyHelpers
public import PlainWebSocket
import ServiceKit
import StreamTestSupport
import TerminalBroker
public import TestSupport
import Testing

/// terminal-broker against the test Postgres and NATS (``LiveHarness``), and a real sshd and
/// tmux of the test's own (``TestSSHD``).
public struct TerminalHarness: Sendable {
    public typealias JSON = [String: Any]

    public var live: LiveHarness
    public let sshd: TestSSHD
    public var tenant: String { self.live.tenant }

    /// - Parameter loginUser: the user the broker logs in to the test's sshd as (``TestSSHD``).
    public init(_ overrides: [String: String] = [:], loginUser: String? = nil) async throws {
        self.sshd = try TestSSHD(loginUser: loginUser)
        try self.sshd.start()
        var overrides = overrides
        overrides["TERMINAL_SCHEMA"] = overrides["TERMINAL_SCHEMA"] ?? TestEnvironment.uniqueName("term")
        overrides["TERMINAL_SSH_KEY_FILE"] = overrides["TERMINAL_SSH_KEY_FILE"] ?? self.sshd.brokerKeyFile.path
        overrides["TERMINAL_CONNECT_TIMEOUT_SECONDS"] = overrides["TERMINAL_CONNECT_TIMEOUT_SECONDS"] ?? "5"
        // The test's sshd is on loopback, which the broker refuses unless an operator allows it.
        overrides["TERMINAL_ALLOWED_NETWORKS"] = overrides["TERMINAL_ALLOWED_NETWORKS"] ?? "127.0.0.1/32"
        overrides["TERMINAL_RECORDINGS_DIR"] = overrides["TERMINAL_RECORDINGS_DIR"] ?? self.sshd.directory.appendingPathComponent("recordings").path
        self.live = try await LiveHarness(overrides: overrides)
        try self.authorizeTenant()
    }

    /// The tenant's SSH key, as the broker derives it from its key file.
    public func tenantKey(_ tenant: String? = nil) throws -> String {
        let file = self.live.overrides["TERMINAL_SSH_KEY_FILE"] ?? self.sshd.brokerKeyFile.path
        return try TenantSSHKeys(brokerKeyText: try String(contentsOfFile: file, encoding: .utf8)).publicKeyLine(tenant: tenant ?? self.tenant)
    }

    /// Makes the test tenant's key (and `others`' keys) the only ones the sshd lets in.
    public func authorizeTenant(also others: [String] = []) throws {
        try self.sshd.authorize(lines: try ([self.tenant] + others).map { try self.tenantKey($0) })
    }

    /// The broker, live on a port of its own (WebSockets need one).
    @discardableResult
    public func run<Value: Sendable>(_ body: @escaping @Sendable (any TestClientProtocol) async throws -> Value) async throws -> Value {
        try await self.live.application(TerminalBrokerService.self).test(.live) { client in
            try await body(client)
        }
    }

    public func token(tenant: String? = nil, scopes: Set<Scope> = [.terminalAttach]) async throws -> String {
        try await self.live.token(tenant: tenant, subject: "phone", scopes: scopes)
    }

    public func admin(tenant: String? = nil) async throws -> String {
        try await self.live.token(tenant: tenant, subject: "admin", scopes: [.admin])
    }

    /// Registers the test's sshd (or `port`) and returns the host's id.
    public func register(_ client: any TestClientProtocol, name: String = "box", port: Int? = nil, tenant: String? = nil) async throws -> String {
        let (status, body) = try await LiveCall.call(
            client,
            .post,
            "/v1/terminal/hosts",
            token: try await self.admin(tenant: tenant),
            json: [
                "name": name, "address": "127.0.0.1", "port": port ?? self.sshd.port, "username": self.sshd.username,
                "tmuxSocket": self.sshd.tmuxSocket,
            ]
        )
        try #require(status == .created, "\(body)")
        return try #require(body["hostId"] as? String)
    }

    /// The tenant's sessions as listed (seed 002's list), and each host with how its listing
    /// went (`GET /v1/terminal/hosts?listing=true`, its `status` and `error` lifted beside its id).
    public func sessions(_ client: any TestClientProtocol, token: String) async throws -> (sessions: [JSON], hosts: [JSON]) {
        let (status, raw) = try await LiveCall.raw(client, .get, "/v1/terminal/sessions", token: token, body: "")
        try #require(status == .ok, "\(raw)")
        let sessions = try #require(try JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [JSON], "not a list: \(raw)")
        let (listed, body) = try await LiveCall.call(client, .get, "/v1/terminal/hosts?listing=true", token: token)
        try #require(listed == .ok, "\(body)")
        let hosts = (body["hosts"] as? [JSON] ?? []).map { host in host.merging(host["listing"] as? JSON ?? [:]) { $1 } }
        return (sessions, hosts)
    }

    public func sessionID(host: String, name: String) -> String {
        TerminalSessionID(hostID: host, name: name).description
    }

    /// A viewer on the attach WebSocket.
    public func viewer(_ client: any TestClientProtocol, session: String, token: String, query: String = "") -> ViewerClient {
        let port = client.port ?? 0
        return ViewerClient(
            url: "ws://127.0.0.1:\(port)/v1/terminal/sessions/\(session)/attach\(query.isEmpty ? "" : "?" + query)",
            token: token
        )
    }
}

/// A phone watching a session: every frame it got (parsed), input it sends, the close.
public final class ViewerClient: Sendable {
    public typealias JSON = [String: Any]

    private let texts = NIOLockedValueBox<[String]>([])
    private let outgoing: AsyncStream<String>.Continuation
    private let task: Task<PlainWebSocket.Close?, any Error>

    public init(url: String, token: String? = nil) {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        self.outgoing = continuation
        let texts = self.texts
        self.task = Task {
            try await PlainWebSocket.connect(url: url, bearer: token) { inbound, outbound in
                // The sender is a task of its own, not a child the handler would wait for: the
                // handler returns as soon as the server's close ends the inbound stream.
                let sender = Task {
                    for await text in stream { try await outbound.write(text: text) }
                }
                defer { sender.cancel() }
                for try await message in inbound {
                    guard case .text(let text) = message else { continue }
                    texts.withLockedValue { $0.append(text) }
                }
            }
        }
    }

    public var frames: [JSON] {
        self.texts.withLockedValue { $0 }.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? JSON }
    }

    /// Everything painted so far: the screens' and outputs' data, in order.
    public var painted: String {
        self.frames.compactMap { frame in ["screen", "output"].contains(frame["type"] as? String) ? frame["data"] as? String : nil }.joined()
    }

    public var lastSeq: UInt64 {
        self.frames.compactMap { ($0["seq"] as? NSNumber)?.uint64Value }.max() ?? 0
    }

    public func send(_ object: JSON) throws {
        let data = try JSONSerialization.data(withJSONObject: object)
        self.outgoing.yield(String(decoding: data, as: UTF8.self))
    }

    /// Waits until `predicate` holds of the frames.
    public func wait(for what: String, timeout: Duration = .seconds(15), _ predicate: @escaping @Sendable ([JSON]) -> Bool) async throws {
        let held = await eventually(timeout: timeout) { predicate(self.frames) }
        try #require(held, "\(what); frames: \(self.frames.map { ($0["type"] as? String) ?? "?" })")
    }

    /// The code of the `end` frame, once one came.
    public func ended(timeout: Duration = .seconds(15)) async throws -> String? {
        try await self.wait(for: "an end frame", timeout: timeout) { frames in frames.contains { $0["type"] as? String == "end" } }
        return self.frames.first { $0["type"] as? String == "end" }.flatMap { ($0["error"] as? [String: Any])?["code"] as? String }
    }

    /// The close frame, once the server closed.
    public func closed(timeout: Duration = .seconds(15)) async throws -> PlainWebSocket.Close? {
        let task = self.task
        return try await withDeadline(timeout, orThrow: HarnessError(message: "the server did not close the WebSocket")) {
            try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
        }
    }

    public func close() {
        self.outgoing.finish()
        self.task.cancel()
    }
}

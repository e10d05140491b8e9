import Foundation
public import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import ServiceKit
import Synchronization

/// A local stand-in for APNs that speaks its real protocol: HTTP/2 over TLS (a CA of its own,
/// ``LocalCertificateAuthority``), provider tokens checked (ES256 signature by a known key,
/// team, age), headers and payload checked as APNs does, and APNs' statuses and reasons in its
/// answers. It records every push and can be told to answer otherwise (410, 429, 5xx, slowly,
/// or with GOAWAY) through ``program(_:)`` or its control paths:
///
/// - `GET /_local/pushes?after=N&limit=M`: `{"pushes": [APNsLocalPush…]}`, oldest first;
/// - `POST /_local/rules` with an ``APNsLocalRule``: 201, or 429 past 1000 rules;
/// - `DELETE /_local/rules`: 204.
///
/// The control paths answer only a request with `Authorization: Bearer <controlToken>` (403
/// otherwise, or always when the server has no control token): they show every push's device
/// token and payload, and can make the server fail pushes.
public final class APNsLocalServer: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        /// 0 for any free port (``start()`` answers the one bound).
        public var port: Int
        /// The provider keys whose tokens are accepted.
        public var keys: [APNsLocalKey]
        /// The topics (bundle ids) accepted; any when empty.
        public var topics: Set<String>
        public var authority: LocalCertificateAuthority
        /// The bearer token the control paths ask for; nil: they are closed.
        public var controlToken: String?

        public init(
            host: String = "127.0.0.1",
            port: Int = 0,
            keys: [APNsLocalKey],
            topics: Set<String> = [],
            authority: LocalCertificateAuthority,
            controlToken: String? = nil
        ) {
            self.host = host
            self.port = port
            self.keys = keys
            self.topics = topics
            self.authority = authority
            self.controlToken = controlToken
        }
    }

    /// How the stream handler answers one request.
    struct Answer: Sendable {
        var status: Int
        var reason: String?
        var timestamp: Int64?
        var apnsID: String?
        var json: [UInt8]?
        var delayMilliseconds = 0
        var goAway = false
    }

    public let configuration: Configuration
    private let keys: [String: APNsLocalKey]
    private let state = APNsLocalState()
    private let channel = Mutex<(any Channel)?>(nil)
    private let connectionCount = Atomic<Int>(0)
    private let logger: Logger

    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.keys = Dictionary(configuration.keys.map { ($0.keyID, $0) }, uniquingKeysWith: { _, last in last })
        self.logger = logger
    }

    /// Binds and serves; answers the port.
    public func start() async throws -> Int {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(self.configuration.authority.serverCertificatePEM.utf8)).map {
                .certificate($0)
            },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(self.configuration.authority.serverKeyPEM.utf8), format: .pem))
        )
        tls.applicationProtocols = ["h2"]
        tls.minimumTLSVersion = .tlsv12
        let context = try NIOSSLContext(configuration: tls)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                self.connectionCount.add(1, ordering: .relaxed)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server,
                        connectionConfiguration: .init(),
                        streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(APNsLocalStreamHandler(server: self))
                        }
                    }
                }
            }
            .bind(host: self.configuration.host, port: self.configuration.port)
            .get()
        self.channel.withLock { $0 = channel }
        let port = channel.localAddress?.port ?? self.configuration.port
        self.logger.info("local APNs listening", metadata: ["address": "https://\(self.configuration.host):\(port)"])
        return port
    }

    /// Stops listening and closes the connections.
    public func stop() async throws {
        guard let channel = self.channel.withLock({ $0.take() }) else { return }
        try await channel.close()
    }

    /// Answers the next push to `rule.deviceToken` (or any) as the rule says.
    @discardableResult
    public func program(_ rule: APNsLocalRule) -> Bool { self.state.add(rule) }

    /// How many connections the server has accepted.
    public var connections: Int { self.connectionCount.load(ordering: .relaxed) }

    /// Forgets every rule.
    public func clearRules() { self.state.clearRules() }

    /// The pushes received after index `after`.
    public func received(after: Int = 0, limit: Int = 10_000) -> [APNsLocalPush] {
        self.state.pushes(after: after, limit: limit)
    }

    // MARK: Requests

    func handle(_ request: APNsLocalRequest) -> Answer {
        if request.path.hasPrefix("/_local/") { return self.control(request) }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let apnsID = request.value("apns-id") ?? UUID().uuidString.lowercased()
        var push = APNsLocalPush(
            index: 0,
            receivedAt: now,
            deviceToken: String(request.path.split(separator: "/").last ?? ""),
            topic: request.value("apns-topic"),
            pushType: request.value("apns-push-type"),
            priority: request.value("apns-priority"),
            expiration: request.value("apns-expiration"),
            collapseID: request.value("apns-collapse-id"),
            apnsID: apnsID,
            payload: String(decoding: request.body, as: UTF8.self),
            status: 200
        )
        var answer = Answer(status: 200, apnsID: apnsID)
        switch APNsLocalCheck.check(request, keys: self.keys, topics: self.configuration.topics, now: now / 1000) {
        case .failure(let refusal):
            answer.status = refusal.status
            answer.reason = refusal.reason
        case .success(let (deviceToken, token)):
            push.keyID = token.keyID
            push.tokenIssuedAt = token.issuedAt
            push.tokenDigest = token.digest
            if let since = self.state.unregisteredSince(deviceToken) {
                answer.status = 410
                answer.reason = "Unregistered"
                answer.timestamp = since
            } else if let rule = self.state.takeRule(for: deviceToken) {
                answer.status = rule.status
                answer.reason = rule.status == 200 ? nil : (rule.reason ?? Self.defaultReason(rule.status))
                answer.delayMilliseconds = max(0, min(rule.delayMilliseconds ?? 0, 120_000))
                answer.goAway = rule.goAway ?? false
                if rule.status == 410 {
                    self.state.unregister(deviceToken, at: now)
                    answer.timestamp = now
                }
            }
        }
        push.status = answer.status
        push.reason = answer.reason
        self.state.record(push)
        return answer
    }

    private static func defaultReason(_ status: Int) -> String {
        switch status {
        case 400: "BadDeviceToken"
        case 403: "ExpiredProviderToken"
        case 410: "Unregistered"
        case 413: "PayloadTooLarge"
        case 429: "TooManyRequests"
        case 503: "ServiceUnavailable"
        default: "InternalServerError"
        }
    }

    private func control(_ request: APNsLocalRequest) -> Answer {
        guard let token = self.configuration.controlToken,
            let presented = request.value("authorization"),
            constantTimeEqual(Array(presented.utf8), Array("Bearer \(token)".utf8))
        else { return Answer(status: 403, reason: "ControlTokenRequired") }
        let url = URLComponents(string: request.path)
        let query = Dictionary((url?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
        switch (request.method, url?.path ?? "") {
        case ("GET", "/_local/pushes"):
            let after = Int(query["after"] ?? "") ?? 0
            let limit = min(max(Int(query["limit"] ?? "") ?? 1000, 1), 10_000)
            let body = try? JSONEncoder().encode(["pushes": self.received(after: after, limit: limit)])
            return Answer(status: 200, json: body.map { Array($0) })
        case ("POST", "/_local/rules"):
            guard let rule = try? JSONDecoder().decode(APNsLocalRule.self, from: Data(request.body)), (100...599).contains(rule.status) else {
                return Answer(status: 400, reason: "BadRule")
            }
            return self.state.add(rule) ? Answer(status: 201, json: Array("{}".utf8)) : Answer(status: 429, reason: "TooManyRules")
        case ("DELETE", "/_local/rules"):
            self.state.clearRules()
            return Answer(status: 204)
        default:
            return Answer(status: 404, reason: "BadPath")
        }
    }
}

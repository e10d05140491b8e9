import Foundation
public import PlainWebSocket
import ServiceKit
public import Synchronization

/// A WebSocket client of `/v1/stream` that sends `messages`, then collects frames until
/// `until` says so (or the server closes).
public struct StreamClient: Sendable {
    public typealias Frame = [String: Any]

    public final class Received: Sendable {
        public let texts = Mutex<[String]>([])
        public init() {}
    }

    public var port: Int
    public var token: String?
    public var path = "/v1/stream"
    public var protocolVersion: String? = "1"
    /// Answer the server's pings.
    public var answerPings = true
    /// Wait this long before reading anything (a slow client).
    public var readDelay: Duration?

    public init(
        port: Int,
        token: String?,
        path: String = "/v1/stream",
        protocolVersion: String? = "1",
        answerPings: Bool = true,
        readDelay: Duration? = nil
    ) {
        self.port = port
        self.token = token
        self.path = path
        self.protocolVersion = protocolVersion
        self.answerPings = answerPings
        self.readDelay = readDelay
    }

    /// A message's frames: one object, or each of a batch (a JSON array of events).
    public static func frames(_ text: String) -> [Frame] {
        let object = try? JSONSerialization.jsonObject(with: Data(text.utf8))
        if let batch = object as? [Frame] { return batch }
        return [object as? Frame ?? [:]]
    }

    public var url: String {
        var query: [String] = []
        if let protocolVersion { query.append("protocol=\(protocolVersion)") }
        return "ws://127.0.0.1:\(self.port)\(self.path)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }

    /// The frames received, parsed, and how the connection was closed (nil: by us, or, with
    /// `toleratingDrop`, by the connection breaking).
    public func run(
        sending messages: [String],
        timeout: Duration = .seconds(30),
        toleratingDrop: Bool = false,
        until: @escaping @Sendable (Frame) -> Bool
    ) async throws -> (frames: [Frame], close: PlainWebSocket.Close?, messages: Int) {
        let received = Received()
        do {
            return try await self.run(sending: messages, timeout: timeout, received: received, until: until)
        } catch  where toleratingDrop && !(error is ServiceKitError) {
            let texts = received.texts.withLock { $0 }
            return (texts.flatMap(StreamClient.frames), nil, texts.count)
        }
    }

    private func run(
        sending messages: [String],
        timeout: Duration,
        received: Received,
        until: @escaping @Sendable (Frame) -> Bool
    ) async throws -> (frames: [Frame], close: PlainWebSocket.Close?, messages: Int) {
        let answerPings = self.answerPings
        let readDelay = self.readDelay
        let url = self.url
        let token = self.token
        let upgraded = Mutex(false)
        let close = try await withDeadline(
            timeout,
            orThrow: ServiceKitError(
                .natsTimeout,
                "stream client timed out after \(timeout) (\(upgraded.withLock { $0 } ? "upgraded" : "never upgraded"), sent \(messages.count) messages, first \(messages.first?.prefix(60) ?? "none")); got \(received.texts.withLock { $0.count }) messages, first \(received.texts.withLock { $0.prefix(3) }), last \(received.texts.withLock { $0.suffix(5) })"
            )
        ) {
            try await PlainWebSocket.connect(url: url, bearer: token) { inbound, outbound in
                upgraded.withLock { $0 = true }
                for message in messages { try await outbound.write(text: message) }
                if let readDelay { try await Task.sleep(for: readDelay) }
                for try await message in inbound {
                    guard case .text(let text) = message else { continue }
                    received.texts.withLock { $0.append(text) }
                    for frame in StreamClient.frames(text) {
                        if answerPings, frame["type"] as? String == "ping" {
                            try await outbound.write(text: #"{"type":"pong"}"#)
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
    public var events: [[String: Any]] { self.filter { $0["seq"] != nil } }
    public var seqs: [Int64] { self.events.compactMap { ($0["seq"] as? NSNumber)?.int64Value } }
    public func ofType(_ type: String) -> [[String: Any]] { self.filter { $0["type"] as? String == type } }
}

/// A `subscribe` message of stream protocol 1.
public func subscribe(lastEventId: Int64? = nil, filters: [String: Any]? = nil, requestID: String = "r1", extra: [String: Any] = [:]) -> String {
    var message: [String: Any] = ["type": "subscribe", "requestId": requestID]
    if let lastEventId { message["lastEventId"] = String(lastEventId) }
    if let filters { message["filters"] = filters }
    message.merge(extra) { $1 }
    return String(decoding: try! JSONSerialization.data(withJSONObject: message), as: UTF8.self)
}

import Foundation
import PlainWebSocket
import ServiceKit

/// A seed 003 client of `/v1/acp` held open: it sends frames when told and keeps every
/// message it receives, parsed, for the test to wait on.
public final class ACPPhone: Sendable {
    public typealias Frame = [String: Any]

    private let received = StreamClient.Received()
    /// How the connection ended, when it has.
    private let ended = StreamClient.Received()
    private let outgoing: AsyncStream<String>.Continuation
    private let task: Task<Void, any Error>

    /// Connects to `ws://127.0.0.1:<port>/v1/acp?protocol=1` with `token`.
    public init(port: Int, token: String) {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        self.outgoing = continuation
        let received = self.received
        let ended = self.ended
        self.task = Task {
            defer { ended.texts.withLock { $0.append("closed") } }
            do {
                _ = try await PlainWebSocket.connect(url: "ws://127.0.0.1:\(port)/v1/acp?protocol=1", bearer: token) { inbound, outbound in
                    let writer = Task {
                        for await text in stream { try await outbound.write(text: text) }
                    }
                    defer { writer.cancel() }
                    for try await message in inbound {
                        guard case .text(let text) = message else { continue }
                        received.texts.withLock { $0.append(text) }
                    }
                }
            } catch {
                ended.texts.withLock { $0.append("\(error)") }
                throw error
            }
        }
    }

    /// Sends one text message.
    public func send(_ text: String) {
        self.outgoing.yield(text)
    }

    /// Sends a JSON-RPC message built from `object`.
    public func send(_ object: Frame) {
        self.send(String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self))
    }

    /// Every message received so far, parsed.
    public var frames: [Frame] {
        self.received.texts.withLock { $0 }.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? Frame }
    }

    /// The envelopes received so far (bare, with a `seq`), in order.
    public var envelopes: [Frame] { self.frames.filter { $0["thread_id"] != nil && $0["direction"] != nil && $0["seq"] != nil } }

    /// The first frame `match` accepts, waiting up to `timeout` for it.
    @discardableResult
    public func waitFor(_ what: String, timeout: Duration = .seconds(30), _ match: (Frame) -> Bool) async throws -> Frame {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = self.frames.first(where: match) { return found }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ServiceKitError(
            .natsTimeout,
            "no \(what) within \(timeout); got \(self.received.texts.withLock { $0.suffix(6) }), connection: \(self.ended.texts.withLock { $0 })"
        )
    }

    /// The answer (result or error) to request `id`.
    public func answer(to id: Int, timeout: Duration = .seconds(30)) async throws -> Frame {
        try await self.waitFor("the answer to \(id)", timeout: timeout) { ($0["id"] as? Int) == id && ($0["result"] != nil || $0["error"] != nil) }
    }

    public func close() {
        self.outgoing.finish()
        self.task.cancel()
    }

    deinit {
        self.close()
    }
}

extension Dictionary where Key == String, Value == Any {
    /// An envelope's JSON-RPC body.
    public var body: [String: Any] { self["body"] as? [String: Any] ?? [:] }
    /// The text of a `session/update` agent message chunk in an envelope's body.
    public var chunkText: String? {
        (((self.body["params"] as? [String: Any])?["update"] as? [String: Any])?["content"] as? [String: Any])?["text"] as? String
    }
}

import Contracts
import Foundation

/// What the connector's ACP bridge reads of the frames it carries: newline-delimited JSON-RPC
/// 2.0 on the agent's stdio, and the envelopes the ACP cache (`/v1/acp`) sends.
///
/// Pure, no I/O: the bridge (``ACPBridge`` in the `swarmdeck` tool) decides with it.
public enum ACPWire {
    /// One JSON-RPC message, as far as the bridge cares.
    public struct Message: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            case request, notification, result
        }

        public var kind: Kind
        public var method: String?
        /// The id as JSON text (`0`, `"s-1"`): ids match only with the same type.
        public var id: String?
        /// The message as it came.
        public var line: String

        /// The message's `result` object (empty when it has another result), or nil when it
        /// is an error (`error` says which).
        public var result: [String: Any]? {
            let object = (try? JSONSerialization.jsonObject(with: Data(self.line.utf8))) as? [String: Any]
            guard object?["error"] == nil else { return nil }
            return object?["result"] as? [String: Any] ?? [:]
        }

        /// The message's `error`, as JSON text.
        public var error: String? {
            let object = (try? JSONSerialization.jsonObject(with: Data(self.line.utf8))) as? [String: Any]
            return object?["error"].flatMap { try? JSONSerialization.data(withJSONObject: $0) }.map { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// Reads one line of the agent's output; nil when it is not a JSON-RPC 2.0 message.
    public static func message(_ line: some StringProtocol) -> Message? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            object["jsonrpc"] as? String == "2.0"
        else { return nil }
        let id = Self.idText(object["id"])
        if let method = object["method"] as? String {
            return Message(kind: id == nil ? .notification : .request, method: method, id: id, line: String(line))
        }
        guard id != nil, object["result"] != nil || object["error"] != nil else { return nil }
        return Message(kind: .result, method: nil, id: id, line: String(line))
    }

    /// An id as JSON text (``JSONRPCID/text(_:)``).
    public static func idText(_ value: Any?) -> String? { JSONRPCID.text(value) }

    /// An envelope the cache sent: a frame of the thread with its per-thread seq.
    public struct Envelope: Sendable {
        public var thread: String
        public var seq: Int64
        /// `agent_to_client` or `client_to_agent`.
        public var direction: String
        /// `client` (a person's, relayed by stream-fanout), `service` (approvals' answer), or
        /// nil (posted to ingest over HTTP: an agent's, or its connector's).
        public var origin: String?
        /// For an answer: the seq of the agent's request it answers.
        public var answersSeq: Int64?
        /// The msgId its poster gave it.
        public var msgID: String?
        /// The JSON-RPC message, one line: its bytes as stored.
        public var body: String
        public var message: Message?
    }

    /// Reads a text the cache sent: an envelope, or nil (a JSON-RPC answer or notification of
    /// the cache itself).
    public static func envelope(_ text: String) -> Envelope? {
        // An envelope carries `"jsonrpc": "2.0"` too (seed 003's persisted form): it is told
        // apart by its thread and direction.
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let thread = object["thread_id"] as? String, let seq = (object["seq"] as? NSNumber)?.int64Value,
            let direction = object["direction"] as? String, object["body"] is [String: Any],
            let body = Self.rawBody(text)
        else { return nil }
        return Envelope(
            thread: thread,
            seq: seq,
            direction: direction,
            origin: object["origin"] as? String,
            answersSeq: (object["answers_seq"] as? NSNumber)?.int64Value,
            msgID: object["msg_id"] as? String,
            body: body,
            message: Self.message(body)
        )
    }

    /// The body's bytes as ingest stored them, cut out of the envelope: ingest writes it raw
    /// between `"body":` and `,"msg_id":`. No string value can hold `"body":` unescaped, and
    /// the envelope's own `,"msg_id":` is the last (its values after are ids and digests).
    static func rawBody(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        guard let from = bytes.firstRange(of: Array(#""body":"#.utf8)), let to = bytes.ranges(of: Array(#","msg_id":"#.utf8)).last,
            from.upperBound < to.lowerBound
        else { return nil }
        let body = String(decoding: bytes[from.upperBound..<to.lowerBound], as: UTF8.self)
        // One line for the agent's stdin: JSON holds newlines only as whitespace between tokens.
        return body.contains("\n") ? body.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: " ") : body
    }

    /// What the bridge does with an envelope of its thread.
    public enum Delivery: Sendable, Equatable {
        /// Write it to the agent's stdin.
        case deliver
        /// Not for the agent: its own frames, its connector's, a method no device sends, or
        /// an answer to a request that is already answered (one decision wins), that another
        /// agent process asked, or that was never asked.
        case skip
    }

    /// The agent's requests to its client that wait for an answer: asked on its stdout, then
    /// seen in the thread with their seq, known by the msgId the connector posted them under
    /// (a request someone else posts with the same id is not this agent's). An answer is
    /// delivered only to the request whose seq it names (ids restart with each agent process),
    /// once.
    public struct Requests: Sendable {
        /// Asked on stdout, not seen in the thread yet: id → the msgId of its mirror post.
        private var asked: [String: String] = [:]
        /// Seen in the thread: id → seq.
        private(set) var open: [String: Int64] = [:]
        /// The most kept of each; past it the oldest go (an agent does not wait on 10,000).
        public static let limit = 10_000

        public init() {}

        /// The agent asked `id` (its stdout), mirrored under `msgID`.
        public mutating func asked(_ id: String, msgID: String) {
            if self.asked.count >= Self.limit { self.asked.removeAll() }
            self.asked[id] = msgID
        }

        /// An envelope of the thread, in order: the agent's own request, seen with its seq.
        public mutating func seen(_ envelope: Envelope) {
            guard envelope.direction == "agent_to_client", let message = envelope.message, message.kind == .request,
                let id = message.id, let msgID = self.asked[id], envelope.msgID == msgID
            else { return }
            self.asked[id] = nil
            if self.open.count >= Self.limit, let oldest = self.open.min(by: { $0.value < $1.value }) {
                self.open[oldest.key] = nil
            }
            self.open[id] = envelope.seq
        }

        /// Whether `envelope` goes to the agent.
        public mutating func delivery(of envelope: Envelope) -> Delivery {
            guard envelope.direction == "client_to_agent", let message = envelope.message else { return .skip }
            switch (envelope.origin, message.kind) {
            case ("client", .request), ("client", .notification):
                // Stream-fanout refuses other methods from devices; this is the second check.
                return message.method.map(ACPMethods.fromDevices.contains) == true ? .deliver : .skip
            case ("client", .result), ("service", .result):
                guard let id = message.id, let seq = self.open[id], envelope.answersSeq == seq else { return .skip }
                self.open[id] = nil
                return .deliver
            default:
                return .skip
            }
        }
    }
}

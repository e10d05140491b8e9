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
        /// The JSON-RPC message, one line.
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
            let direction = object["direction"] as? String, let body = object["body"] as? [String: Any],
            let line = try? JSONSerialization.data(withJSONObject: body)
        else { return nil }
        let text = String(decoding: line, as: UTF8.self)
        return Envelope(thread: thread, seq: seq, direction: direction, origin: object["origin"] as? String, body: text, message: Self.message(text))
    }

    /// What the bridge does with an envelope of its thread.
    public enum Delivery: Sendable, Equatable {
        /// Write it to the agent's stdin.
        case deliver
        /// Not for the agent: its own frames, its connector's, or an answer to a request that
        /// is already answered (one decision wins) or was never asked.
        case skip
    }

    /// Whether `envelope` goes to the agent, given the ids of the agent's requests still
    /// waiting for an answer (`pending`; a delivered answer is removed from it).
    public static func delivery(of envelope: Envelope, pending: inout Set<String>) -> Delivery {
        guard envelope.direction == "client_to_agent", envelope.origin == "client" || envelope.origin == "service",
            let message = envelope.message
        else { return .skip }
        if message.kind == .result {
            guard let id = message.id, pending.remove(id) != nil else { return .skip }
        }
        return .deliver
    }
}

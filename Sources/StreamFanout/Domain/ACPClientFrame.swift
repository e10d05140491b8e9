import Contracts
import Crypto
import Foundation

/// A person's ACP frame on `/v1/acp` (any JSON-RPC 2.0 message that is not an `acp.cache.*`
/// method), read for what the cache must check before it appends it to a thread: which thread
/// it names, what it is, and which option it selects when it answers a request.
///
/// Pure: parsing and decisions, no I/O (``ACPSession`` does the rest).
struct ACPClientFrame: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case request
        case notification
        /// A result or error answering the agent's request `id`.
        case result
    }

    /// The frame's bytes, stored as received.
    let body: [UInt8]
    let kind: Kind
    /// The method of a request or notification.
    let method: String?
    /// The JSON-RPC id as JSON text (`5`, `"p-1"`), for a request or result.
    let id: String?
    /// `params.sessionId`, when it is one: the thread the frame names.
    let sessionID: String?
    /// For a result that selects an option (`{"outcome":{"outcome":"selected","optionId":…}}`):
    /// the option.
    let selectedOption: String?

    /// Why a frame is refused.
    struct Problem: Error, Equatable {
        var message: String
    }

    /// Whether `object` is for the cache (an `acp.cache.*` method) rather than for an agent.
    static func isCacheMethod(_ method: String?) -> Bool {
        method?.hasPrefix("acp.cache.") == true
    }

    /// Reads `body`, a JSON-RPC 2.0 message for an agent.
    static func parse(_ body: [UInt8]) throws(Problem) -> ACPClientFrame {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) as? [String: Any] else {
            throw Problem(message: "an ACP frame is a JSON object")
        }
        guard object["jsonrpc"] as? String == "2.0" else { throw Problem(message: "an ACP frame carries \"jsonrpc\": \"2.0\"") }
        let id = JSONRPCID.text(object["id"])
        if object["id"] != nil, !(object["id"] is NSNull), id == nil {
            throw Problem(message: "a JSON-RPC id is a string or an integer")
        }
        let params = object["params"] as? [String: Any]
        let sessionID = (params?["sessionId"] as? String).flatMap { EntityID.problem($0, field: "sessionId") == nil ? $0 : nil }
        if let method = object["method"] {
            guard let method = method as? String, !method.isEmpty, method.utf8.count <= 128 else {
                throw Problem(message: "a method is a name of 1 to 128 bytes")
            }
            guard object["result"] == nil, object["error"] == nil else { throw Problem(message: "a request has no result or error") }
            return ACPClientFrame(
                body: body,
                kind: id == nil ? .notification : .request,
                method: method,
                id: id,
                sessionID: sessionID,
                selectedOption: nil
            )
        }
        guard (object["result"] == nil) != (object["error"] == nil) else {
            throw Problem(message: "a JSON-RPC message has a method (request, notification) or one of result and error")
        }
        guard let id else { throw Problem(message: "a result answers a request: it carries the request's id") }
        return ACPClientFrame(body: body, kind: .result, method: nil, id: id, sessionID: nil, selectedOption: ACPMethods.selectedOption(in: object))
    }

    /// Whether a device may send it: a prompt, a cancel (``ACPMethods/fromDevices``), or an
    /// answer.
    var isForDevices: Bool {
        self.kind == .result || self.method.map(ACPMethods.fromDevices.contains) == true
    }

    /// The thread the frame goes to: its `params.sessionId`, else the connection's bound
    /// thread (``ACPSession``: the last subscribed, or `acp.cache.bind`).
    func thread(bound: String?) -> String? {
        self.sessionID ?? bound
    }

    /// The scopes an answer to `request` (the agent's request with its id, as stored) needs:
    /// `thread:write`, and `tool:run` too unless it cannot let a tool run: an error, a
    /// `cancelled` outcome, or an offered option of a `reject` kind. Anything else answering a
    /// `session/request_permission` (an allow option, a shape we do not read) needs `tool:run`.
    /// - Throws: an option the request did not offer.
    func answerScopes(to request: [UInt8]) throws(Problem) -> [Scope] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(request)) as? [String: Any],
            object["method"] as? String == ACPMethods.requestPermission
        else { return [.threadWrite] }
        guard let answer = try? JSONSerialization.jsonObject(with: Data(self.body)) as? [String: Any] else { return [.threadWrite, .toolRun] }
        if answer["error"] != nil { return [.threadWrite] }
        let result = answer["result"] as? [String: Any]
        let outcome = result?["outcome"] as? [String: Any]
        if result?.count == 1, outcome?.count == 1, outcome?["outcome"] as? String == "cancelled" { return [.threadWrite] }
        if let selected = self.selectedOption {
            let options = (object["params"] as? [String: Any])?["options"] as? [[String: Any]] ?? []
            guard let option = options.first(where: { $0["optionId"] as? String == selected }) else {
                throw Problem(message: "option \(selected.prefix(64)) was not offered")
            }
            if (option["kind"] as? String)?.hasPrefix("reject") == true { return [.threadWrite] }
        }
        return [.threadWrite, .toolRun]
    }

    /// The msgId that makes a repeat of the frame (a client sending it again after a
    /// reconnect) a duplicate, from the device, the thread, the bytes and an anchor: for an
    /// answer, the seq of the request it answers (the same id answered again in a later agent
    /// process is another answer); for a prompt, the seq of the agent's last answer (resent
    /// mid-turn it is the same prompt; its id reused once the turn ended, a new one); for a
    /// cancel, the seq of the agent's last envelope (a `session/cancel` is the same bytes every
    /// turn, and must reach the agent every turn).
    func msgID(device: String, thread: String, anchor: Int64) -> String {
        var hasher = SHA256()
        for part in [device, thread, self.kind == .result ? "answers" : "after", String(anchor)] {
            hasher.update(data: Array(part.utf8) + [0])
        }
        hasher.update(data: self.body)
        return "client-" + hasher.finalize().prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}

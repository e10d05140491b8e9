import Contracts
import EventLog
import Foundation
import ServiceKit

/// An ACP JSON-RPC message posted to a thread, validated and rendered as an event.
enum ACPFrame {
    /// The event for one message. The body is kept byte for byte; it must be a JSON-RPC 2.0
    /// object (a request, a result/error or a notification). `origin` marks a message a service
    /// appended (`"origin":"service"` in the envelope), which nothing posted over HTTP carries:
    /// an ACP client takes the answer to a permission request only from such a message.
    /// `"origin":"client"` with `device` marks a person's frame stream-fanout relayed from
    /// `/v1/acp`, which the connector delivers to its agent.
    static func prepare(
        body: [UInt8],
        threadID: String,
        sessionID: String?,
        direction: String,
        msgID: String,
        swarmID: String,
        agentID: String,
        origin: String? = nil,
        device: String? = nil,
        answersSeq: Int64? = nil,
        now: Date
    ) throws(Rejection) -> PreparedEvent {
        for (field, value) in [("threadId", threadID), ("msgId", msgID), ("swarmId", swarmID), ("agentId", agentID)] {
            try Rejection.checkIdentifier(value, field: field)
        }
        if let sessionID { try Rejection.checkIdentifier(sessionID, field: "sessionId") }
        var sessionID = sessionID
        guard let direction = ACPPart.Direction(name: direction) else {
            throw Rejection(reason: "direction must be agent_to_client or client_to_agent")
        }
        let message: JSONValue
        do {
            message = try NativeBatchParser.parseJSON(body)
        } catch {
            throw Rejection(reason: "the body is not JSON: \(error.reason)")
        }
        guard let keys = message.fields else { throw Rejection(reason: "the body must be a JSON-RPC 2.0 object") }
        guard keys["jsonrpc"] == .string("2.0") else { throw Rejection(reason: "the body must carry \"jsonrpc\": \"2.0\"") }
        let kind: ACPPart.Kind
        if case .string = keys["method"] {
            kind = keys["id"].map { $0 == .null ? ACPPart.Kind.notification : .request } ?? .notification
        } else if keys["result"] != nil || keys["error"] != nil {
            kind = .result
        } else {
            throw Rejection(reason: "a JSON-RPC message needs method (request, notification) or result/error")
        }
        // Every envelope names its session (seed 003): the message's, else the thread's.
        let params = keys["params"]?.fields
        if sessionID == nil {
            if case .string(let named)? = params?["sessionId"], EntityID.problem(named, field: "sessionId") == nil {
                sessionID = named
            } else {
                sessionID = threadID
            }
        }
        let title = Self.title(method: keys["method"], params: params, direction: direction)
        let severity: BusSeverity = keys["error"] != nil ? .error : .info
        // Seed 003's `blake3(body)`, as `b3sum` prints it.
        let checksum = BLAKE3.hash(body)
        let milliseconds = Int64(now.timeIntervalSince1970 * 1000)

        var head = JSONWriter(capacity: 256)
        head.key("type")
        head.string(BusEventKind.acp.frameType)
        head.key("ts")
        head.integer(milliseconds)
        head.key("swarmId")
        head.string(swarmID)
        head.key("agentId")
        head.string(agentID)
        head.key("severity")
        head.string(severity.name)
        head.raw(",\"envelope\":{\"thread_id\":")
        head.string(threadID)
        if let sessionID {
            head.key("session_id")
            head.string(sessionID)
        }
        head.raw(",\"seq\":")

        var rest = JSONWriter(capacity: body.count + 200)
        rest.key("ts")
        // Seed 003's `ts`, in UTC with milliseconds and its zone: `2025-09-06T20:15:43.512Z`.
        rest.string(now.rfc3339Milliseconds)
        rest.key("direction")
        rest.string(direction.name)
        rest.key("kind")
        rest.string(kind.name)
        rest.key("jsonrpc")
        rest.string("2.0")
        rest.key("body")
        rest.bytes.append(contentsOf: body)
        rest.key("msg_id")
        rest.string(msgID)
        rest.key("checksum")
        rest.string(checksum.lowercaseHex)
        if let origin {
            rest.key("origin")
            rest.string(origin)
        }
        if let device {
            rest.key("device")
            rest.string(device)
        }
        if let answersSeq {
            rest.key("answers_seq")
            rest.integer(answersSeq)
        }
        rest.raw("}}")

        return PreparedEvent(
            // One namespace with native events: thread and msg_id together are the key.
            msgID: "acp:\(threadID):\(msgID)",
            swarmID: swarmID,
            agentID: agentID,
            kind: .acp,
            severity: severity,
            occurredAtMilliseconds: milliseconds,
            frameTail: head.bytes,
            acp: ACPPart(
                threadID: threadID,
                sessionID: sessionID,
                direction: direction,
                kind: kind,
                msgID: msgID,
                checksum: checksum,
                body: body,
                frameRest: rest.bytes,
                rpcID: kind == .notification ? nil : keys["id"].flatMap(Self.rpcID),
                title: title
            )
        )
    }

    /// A JSON-RPC id as JSON text (``JSONRPCID``): a string, or an integer held exactly.
    static func rpcID(_ id: JSONValue) -> String? {
        switch id {
        case .string(let text): JSONRPCID.jsonString(text)
        case .number(let number): JSONRPCID.text(NSNumber(value: number))
        default: nil
        }
    }

    /// The longest title kept, in UTF-8 bytes.
    static let maxTitleBytes = 240

    /// The title a message gives its thread: the agent's `session_info_update` title replaces
    /// it; the first line of a person's `session/prompt` text names a thread that has none.
    static func title(method: JSONValue?, params: [String: JSONValue]?, direction: ACPPart.Direction) -> ACPPart.ThreadTitle? {
        // The first line, without control or format characters (bidi overrides), at most
        // maxTitleBytes.
        func clipped(_ text: String) -> String? {
            let line = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            var title = String.UnicodeScalarView()
            var bytes = 0
            for scalar in line.unicodeScalars where ![.control, .format].contains(scalar.properties.generalCategory) {
                bytes += UTF8.width(scalar)
                if bytes > Self.maxTitleBytes { break }
                title.append(scalar)
            }
            return title.isEmpty ? nil : String(title)
        }
        switch (method, direction) {
        case (.string("session/update")?, .agentToClient):
            guard let update = params?["update"]?.fields, update["sessionUpdate"] == .string("session_info_update"),
                case .string(let text)? = update["title"], let title = clipped(text)
            else { return nil }
            return ACPPart.ThreadTitle(text: title, replaces: true)
        case (.string("session/prompt")?, .clientToAgent):
            guard case .array(let blocks)? = params?["prompt"] else { return nil }
            for block in blocks {
                if let fields = block.fields, fields["type"] == .string("text"), case .string(let text)? = fields["text"], let title = clipped(text) {
                    return ACPPart.ThreadTitle(text: title, replaces: false)
                }
            }
            return nil
        default:
            return nil
        }
    }
}

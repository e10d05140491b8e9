import Contracts

/// A validated event, waiting for its seq. Everything costly (validation, rendering) is done
/// on the request path; the commit path only prefixes the seq to ``frameTail``.
struct PreparedEvent: Sendable {
    var msgID: String
    var swarmID: String
    var agentID: String
    var kind: BusEventKind
    var severity: BusSeverity
    /// Unix milliseconds at the source.
    var occurredAtMilliseconds: Int64
    /// The request that brought it in (for the envelope's log correlation).
    var requestID = ""
    /// The frame after its opening `{"seq":N,"eventId":"N"` — starts with `,`, ends with `}`.
    /// For an ACP envelope: up to the envelope's own `"seq":`, continued by ``ACPPart/frameRest``.
    var frameTail: [UInt8]
    /// Set for an ACP envelope appended to a thread.
    var acp: ACPPart?

    /// Roughly the memory it holds while it waits for commit, for the queue's byte bound.
    var footprint: Int {
        128 + self.msgID.utf8.count + self.swarmID.utf8.count + self.agentID.utf8.count + self.frameTail.count
            + (self.acp.map { $0.body.count + $0.frameRest.count + $0.threadID.utf8.count + $0.msgID.utf8.count } ?? 0)
    }

    /// The client frame for `seq` (and, for ACP, the per-thread seq).
    func frame(seq: Int64, threadSeq: Int64 = 0) -> [UInt8] {
        var writer = JSONWriter(capacity: self.frameTail.count + (self.acp?.frameRest.count ?? 0) + 60)
        writer.raw("{\"seq\":")
        writer.integer(seq)
        writer.raw(",\"eventId\":\"")
        writer.integer(seq)
        writer.raw("\"")
        writer.bytes.append(contentsOf: self.frameTail)
        if let acp = self.acp {
            writer.integer(threadSeq)
            writer.bytes.append(contentsOf: acp.frameRest)
        }
        return writer.bytes
    }
}

/// The ACP side of an event: one JSON-RPC message appended to a thread (seed 003).
struct ACPPart: Sendable {
    enum Direction: Int16, Sendable {
        case agentToClient = 1
        case clientToAgent = 2

        init?(name: String) {
            switch name {
            case "agent_to_client": self = .agentToClient
            case "client_to_agent": self = .clientToAgent
            default: return nil
            }
        }

        var name: String { self == .agentToClient ? "agent_to_client" : "client_to_agent" }
    }

    enum Kind: Int16, Sendable {
        case request = 1
        case result = 2
        case notification = 3

        var name: String {
            switch self {
            case .request: "request"
            case .result: "result"
            case .notification: "notification"
            }
        }
    }

    var threadID: String
    var sessionID: String?
    var direction: Direction
    var kind: Kind
    /// The sender's msg_id (de-duplicated per thread).
    var msgID: String
    /// SHA-256 of the body.
    var checksum: [UInt8]
    /// The JSON-RPC message exactly as received.
    var body: [UInt8]
    /// The frame after the envelope's `"seq":` value.
    var frameRest: [UInt8]
}

import Contracts
import Foundation
import NIOCore

/// A client message of stream protocol 1 (docs/stream-protocol.md).
struct ClientMessage: Decodable {
    struct Filters: Decodable {
        var swarmIds: [String]?
        var agentIds: [String]?
        var severityGte: String?
        var include: [String]?
    }

    var type: String
    var requestId: String?
    var filters: Filters?
    /// The last event the client has; a string (`eventId`) or a number.
    var lastEventId: EventID?
    var maxEventsPerSecond: Int?
    /// Collapse consecutive identical log lines of an agent into one `suppressed` count.
    var collapseRepeats: Bool?
    /// Let the server send several events in one message, as a JSON array.
    var batchEvents: Bool?

    struct EventID: Decodable {
        var seq: Int64

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int64.self) {
                self.seq = number
            } else if let text = try? container.decode(String.self), let number = Int64(text) {
                self.seq = number
            } else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "lastEventId must be an eventId (a seq)")
            }
            guard self.seq >= 0 else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "lastEventId must not be negative")
            }
        }
    }
}

/// The server's protocol messages (events themselves are their frames, as rendered by ingest).
enum ServerMessage {
    static func subscribed(requestID: String?, from: Int64, head: Int64, maxEventsPerSecond: Int) -> ByteBuffer {
        Self.json(["type": "subscribed", "fromSeq": from, "headSeq": head, "maxEventsPerSecond": maxEventsPerSecond], requestID: requestID)
    }

    static func unsubscribed(requestID: String?) -> ByteBuffer {
        Self.json(["type": "unsubscribed"], requestID: requestID)
    }

    static func throttled(requestID: String?, maxEventsPerSecond: Int) -> ByteBuffer {
        Self.json(["type": "throttled", "maxEventsPerSecond": maxEventsPerSecond], requestID: requestID)
    }

    /// Log lines `from...to` of an agent, identical to the one sent before them, not sent.
    static func suppressed(swarmID: String, agentID: String, count: Int, from: Int64, to: Int64) -> ByteBuffer {
        Self.json(["type": "suppressed", "swarmId": swarmID, "agentId": agentID, "count": count, "fromSeq": from, "toSeq": to], requestID: nil)
    }

    static func ping(now: Date) -> ByteBuffer {
        Self.json(["type": "ping", "ts": Int64(now.timeIntervalSince1970 * 1000)], requestID: nil)
    }

    /// Events `from...to` (tenant seqs) that this connection will not send; subscribe again
    /// with `lastEventId` = `resumeFrom` to get them.
    static func gap(from: Int64, to: Int64, reason: String) -> ByteBuffer {
        Self.json(["type": "gap", "fromSeq": from, "toSeq": to, "reason": reason, "resumeFrom": String(from - 1)], requestID: nil)
    }

    static func error(_ code: ErrorCode, _ message: String, requestID: String?) -> ByteBuffer {
        let body = ErrorEnvelope.Body(code: code, message: message, requestId: requestID)
        let error = (try? JSONEncoder().encode(body)).flatMap { try? JSONSerialization.jsonObject(with: $0) } ?? [:]
        return Self.json(["type": "error", "error": error], requestID: requestID)
    }

    private static func json(_ object: [String: Any], requestID: String?) -> ByteBuffer {
        var object = object
        if let requestID { object["requestId"] = requestID }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return ByteBuffer(bytes: data)
    }
}

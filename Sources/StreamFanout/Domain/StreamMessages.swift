import Contracts
import Foundation
import NIOCore

/// The stream's messages as bytes: the shapes are `Contracts.StreamServerMessage`'s.
enum ServerMessage {

    static func subscribed(requestID: String?, from: Int64, head: Int64, maxEventsPerSecond: Int) -> ByteBuffer {
        Self.bytes(.subscribed(requestID: requestID, from: from, head: head, maxEventsPerSecond: maxEventsPerSecond))
    }

    static func unsubscribed(requestID: String?) -> ByteBuffer {
        Self.bytes(.unsubscribed(requestID: requestID))
    }

    static func throttled(requestID: String?, maxEventsPerSecond: Int) -> ByteBuffer {
        Self.bytes(.throttled(requestID: requestID, maxEventsPerSecond: maxEventsPerSecond))
    }

    static func suppressed(swarmID: String, agentID: String, count: Int, from: Int64, to: Int64) -> ByteBuffer {
        Self.bytes(.suppressed(swarmID: swarmID, agentID: agentID, count: count, from: from, to: to))
    }

    static func ping(now: Date) -> ByteBuffer {
        Self.bytes(.ping(milliseconds: Int64(now.timeIntervalSince1970 * 1000)))
    }

    static func gap(from: Int64, to: Int64, reason: String) -> ByteBuffer {
        Self.bytes(.gap(from: from, to: to, reason: reason))
    }

    static func error(_ code: ErrorCode, _ message: String, requestID: String?) -> ByteBuffer {
        Self.bytes(.error(ErrorEnvelope.Body(code: code, message: message, requestId: requestID)))
    }

    /// A fresh encoder each time: connections encode concurrently, and these messages are few
    /// (events themselves are not encoded here).
    private static func bytes(_ message: StreamServerMessage) -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return ByteBuffer(bytes: (try? encoder.encode(message)) ?? Data(#"{"type":"error"}"#.utf8))
    }
}

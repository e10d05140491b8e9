import Contracts
import EventLog
import Foundation
import Logging
import ServiceKit

/// Appends people's ACP frames from `/v1/acp` to their threads: checks the frame, the scopes,
/// the rates and the thread, then sends it to ingest on people's lane
/// (``Subjects/clientACPFrames``), where ingest stores it as `client_to_agent` with
/// `"origin":"client"` and the device, and answers once it has committed it. Stream-fanout
/// never writes the log itself.
///
/// The rates are per replica: a device's frames and a thread's frames each pass a token bucket
/// (`fanout.client-frames-per-second`, twice that as the burst; a thread takes twice a device's).
struct ACPFrameRelay: Sendable {
    let reader: EventLogReader
    let sender: ServiceEventSender
    let maxFrameBytes: Int
    let perDevice: KeyedTokenBuckets
    let perThread: KeyedTokenBuckets
    let logger: Logger

    init(reader: EventLogReader, sender: ServiceEventSender, maxFrameBytes: Int, framesPerSecond: Int, logger: Logger) {
        self.reader = reader
        self.sender = sender
        self.maxFrameBytes = maxFrameBytes
        self.perDevice = KeyedTokenBuckets(capacity: Double(2 * framesPerSecond), perSecond: Double(framesPerSecond))
        self.perThread = KeyedTokenBuckets(capacity: Double(4 * framesPerSecond), perSecond: Double(2 * framesPerSecond))
        self.logger = logger
    }

    /// A frame committed to its thread.
    struct Sent: Sendable {
        var thread: String
        var threadSeq: Int64
        var msgID: String
        var duplicate: Bool
    }

    /// A refusal, as the JSON-RPC error the sender gets (docs/stream-protocol.md).
    struct Refusal: Error, Sendable {
        var code: ErrorCode
        var message: String
        var retryAfterSeconds: Int?

        init(_ code: ErrorCode, _ message: String, retryAfterSeconds: Int? = nil) {
            self.code = code
            self.message = message
            self.retryAfterSeconds = retryAfterSeconds
        }

        /// The JSON-RPC error code: ours, in the server's range.
        var rpcCode: Int {
            switch self.code {
            case .invalidRequest: -32602
            case .permissionDenied: -32003
            case .notFound: -32004
            case .rateLimited: -32005
            case .payloadTooLarge: -32006
            default: -32000
            }
        }
    }

    /// Appends `text` (a frame for an agent) to its thread as `identity`'s, `bound` being the
    /// connection's thread for frames that name none.
    func relay(_ text: String, identity: AccessIdentity, bound: String?) async throws(Refusal) -> Sent {
        guard identity.agentSession == nil else {
            throw Refusal(.permissionDenied, "an agent session reads its threads here; its agent's frames go to ingest")
        }
        let body = Array(text.utf8)
        guard body.count <= self.maxFrameBytes else {
            throw Refusal(.payloadTooLarge, "an ACP frame is at most \(self.maxFrameBytes) bytes (fanout.max-client-frame-bytes); nothing was stored")
        }
        let frame: ACPClientFrame
        do {
            frame = try ACPClientFrame.parse(body)
        } catch {
            throw Refusal(.invalidRequest, error.message)
        }
        guard let thread = frame.thread(bound: bound) else {
            throw Refusal(.invalidRequest, "name the thread: params.sessionId, or subscribe to it (or acp.cache.bind it) first")
        }
        guard identity.scopes.contains(.threadWrite) else {
            throw Refusal(.permissionDenied, "sending to an agent needs the thread:write scope")
        }
        guard frame.isForDevices else {
            throw Refusal(
                .permissionDenied,
                "a device sends session/prompt, session/cancel and answers to the agent's requests, not \(frame.method?.prefix(64) ?? "")"
            )
        }
        if let wait = self.perDevice.take(identity.tenant + "\u{0}" + identity.subject) {
            throw Refusal(.rateLimited, "this device sends too many ACP frames; retry later", retryAfterSeconds: wait.retryAfterSeconds)
        }
        if let wait = self.perThread.take(identity.tenant + "\u{0}" + thread) {
            throw Refusal(
                .rateLimited,
                "thread \(thread.prefix(64)) takes too many ACP frames; retry later",
                retryAfterSeconds: wait.retryAfterSeconds
            )
        }
        do {
            // The thread's agent: the one of its first envelope.
            guard let owner = try await self.reader.threadAgent(tenant: identity.tenant, thread: thread) else {
                throw Refusal(.notFound, "no thread \(thread.prefix(64)): an agent opens its thread first")
            }
            // An answer is tied to the request it answers (its seq): the connector delivers it to
            // that request only.
            var answers: Int64?
            if frame.kind == .result, let id = frame.id {
                guard let request = try await self.reader.agentRequest(tenant: identity.tenant, thread: thread, id: id) else {
                    throw Refusal(.invalidRequest, "the agent asked nothing with id \(id.prefix(64)) in thread \(thread.prefix(64))")
                }
                let needed: [Scope]
                do {
                    needed = try frame.answerScopes(to: Array(buffer: request.body))
                } catch {
                    throw Refusal(.invalidRequest, error.message)
                }
                if !needed.allSatisfy(identity.scopes.contains) {
                    throw Refusal(.permissionDenied, "an answer that can let a tool run needs the tool:run scope")
                }
                answers = request.threadSeq
            }
            let head = try await self.reader.threadHead(tenant: identity.tenant, thread: thread)
            // What makes a frame sent again the same one: an answer, its request; a prompt, the
            // agent's last answer (a prompt resent mid-turn is the same; its id reused after the
            // turn ended is a new one); a cancel, the agent's last word.
            let anchor: Int64
            if let answers {
                anchor = answers
            } else {
                anchor = try await self.reader.lastAgentSeq(
                    tenant: identity.tenant,
                    thread: thread,
                    kind: frame.kind == .request ? .result : nil
                )
            }
            let msgID = frame.msgID(device: identity.subject, thread: thread, anchor: anchor)
            var event = BusServiceEvent()
            event.msgID = msgID
            event.swarmID = owner.swarm
            event.agentID = owner.agent
            event.kind = .acp
            event.severity = .info
            event.occurredUnixNano = Int64(Date().timeIntervalSince1970 * 1_000_000_000)
            var message = BusServiceACPMessage()
            message.threadID = thread
            message.sessionID = frame.sessionID ?? thread
            message.direction = "client_to_agent"
            message.body = Data(body)
            message.origin = "client"
            message.device = identity.subject
            message.answersSeq = answers ?? 0
            event.acp = message
            let seqs = try await self.sender.send(tenant: identity.tenant, [event], on: self.sender.subjects.clientACPFrames)
            guard let seq = seqs.first, let threadSeq = try await self.reader.threadSeq(tenant: identity.tenant, seq: seq) else {
                throw Refusal(.serverError, "ingest stored the frame under no thread seq")
            }
            return Sent(thread: thread, threadSeq: threadSeq, msgID: msgID, duplicate: threadSeq <= head)
        } catch let refusal as Refusal {
            throw refusal
        } catch let refusal as ServiceEventRefusal {
            throw Refusal(refusal.retryable ? .serviceUnavailable : .invalidRequest, refusal.message, retryAfterSeconds: refusal.retryable ? 1 : nil)
        } catch {
            self.logger.warning("ACP frame not relayed", metadata: ["thread": "\(thread)", "error": "\(String(reflecting: error))"])
            throw Refusal(.serviceUnavailable, "the frame could not be stored; send it again", retryAfterSeconds: 1)
        }
    }
}

public import Contracts

/// A validated event, waiting for its seq. Everything costly (validation, rendering) is done
/// on the request path; the commit path only prefixes the seq to ``frameTail``.
public struct PreparedEvent: Sendable {
    public var msgID: String
    public var swarmID: String
    public var agentID: String
    public var kind: BusEventKind
    public var severity: BusSeverity
    /// Unix milliseconds at the source.
    public var occurredAtMilliseconds: Int64
    /// The request that brought it in (for the envelope's log correlation).
    public var requestID = ""
    /// The frame after its opening `{"seq":N,"eventId":"N"` — starts with `,`, ends with `}`.
    /// For an ACP envelope: up to the envelope's own `"seq":`, continued by ``ACPPart/frameRest``.
    public var frameTail: [UInt8]
    /// Set for an ACP envelope appended to a thread.
    public var acp: ACPPart?

    /// Roughly the memory it holds while it waits for commit, for the queue's byte bound.
    public var footprint: Int {
        128 + self.msgID.utf8.count + self.swarmID.utf8.count + self.agentID.utf8.count + self.frameTail.count
            + (self.acp.map { $0.body.count + $0.frameRest.count + $0.threadID.utf8.count + $0.msgID.utf8.count } ?? 0)
    }

    public init(
        msgID: String,
        swarmID: String,
        agentID: String,
        kind: BusEventKind,
        severity: BusSeverity,
        occurredAtMilliseconds: Int64,
        requestID: String = "",
        frameTail: [UInt8],
        acp: ACPPart? = nil
    ) {
        self.msgID = msgID
        self.swarmID = swarmID
        self.agentID = agentID
        self.kind = kind
        self.severity = severity
        self.occurredAtMilliseconds = occurredAtMilliseconds
        self.requestID = requestID
        self.frameTail = frameTail
        self.acp = acp
    }

    /// The client frame for `seq` (and, for ACP, the per-thread seq): see ``EventFrame``.
    func frame(seq: Int64, threadSeq: Int64 = 0) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(self.frameCount(seq: seq, threadSeq: threadSeq))
        self.writeFrame(seq: seq, threadSeq: threadSeq, to: &bytes)
        return bytes
    }

    /// ``frame(seq:threadSeq:)`` appended to `bytes`.
    func writeFrame(seq: Int64, threadSeq: Int64 = 0, to bytes: inout some RangeReplaceableCollection<UInt8>) {
        Self.writeFrameOpening(seq: seq, to: &bytes)
        bytes.append(contentsOf: self.frameTail)
        if let acp = self.acp {
            bytes.append(contentsOf: String(threadSeq).utf8)
            bytes.append(contentsOf: acp.frameRest)
        }
    }

    /// The length of ``frame(seq:threadSeq:)``, without rendering it.
    func frameCount(seq: Int64, threadSeq: Int64 = 0) -> Int {
        let seqDigits = String(seq).utf8.count
        let opening = Self.frameOpening.count + 2 * seqDigits + Self.frameEventID.count + 1 + self.frameTail.count
        guard let acp = self.acp else { return opening }
        return opening + String(threadSeq).utf8.count + acp.frameRest.count
    }

    /// Every frame's opening, `{"seq":N,"eventId":"N"`, appended to `bytes` (see ``EventFrame``).
    static func writeFrameOpening(seq: Int64, to bytes: inout some RangeReplaceableCollection<UInt8>) {
        let digits = String(seq).utf8
        bytes.append(contentsOf: Self.frameOpening)
        bytes.append(contentsOf: digits)
        bytes.append(contentsOf: Self.frameEventID)
        bytes.append(contentsOf: digits)
        bytes.append(UInt8(ascii: "\""))
    }

    fileprivate static let frameOpening = Array(#"{"seq":"#.utf8)
    private static let frameEventID = Array(#","eventId":""#.utf8)
}

extension PreparedEvent {
    /// A state event's fields for the fleet (read from its frame); nil for other events and
    /// for a state frame that does not read.
    var fleetState: EventFrame.State? {
        guard self.kind == .state else { return nil }
        return EventFrame.state(in: Self.frameOpening + Array("0".utf8) + self.frameTail)
    }
}

/// The ACP side of an event: one JSON-RPC message appended to a thread (seed 003).
public struct ACPPart: Sendable {
    public enum Direction: Int16, Sendable {
        case agentToClient = 1
        case clientToAgent = 2

        public init?(name: String) {
            switch name {
            case "agent_to_client": self = .agentToClient
            case "client_to_agent": self = .clientToAgent
            default: return nil
            }
        }

        public var name: String { self == .agentToClient ? "agent_to_client" : "client_to_agent" }
    }

    public enum Kind: Int16, Sendable {
        case request = 1
        case result = 2
        case notification = 3

        public var name: String {
            switch self {
            case .request: "request"
            case .result: "result"
            case .notification: "notification"
            }
        }
    }

    public var threadID: String
    public var sessionID: String?
    public var direction: Direction
    public var kind: Kind
    /// The sender's msg_id (de-duplicated per thread).
    public var msgID: String
    /// SHA-256 of the body.
    public var checksum: [UInt8]
    /// The JSON-RPC message exactly as received.
    public var body: [UInt8]
    /// The frame after the envelope's `"seq":` value.
    public var frameRest: [UInt8]
    /// The message's JSON-RPC id as JSON text, for a request or an answer.
    public var rpcID: String?
    /// A title for the thread this message gives (``ThreadTitle``): the agent's
    /// `session_info_update` sets it, a first prompt names a thread that has none.
    public var title: ThreadTitle?

    /// A thread's title, as a message proposes it.
    public struct ThreadTitle: Sendable, Equatable {
        public var text: String
        /// Replaces the thread's title (the agent named it); else only names a thread with none.
        public var replaces: Bool

        public init(text: String, replaces: Bool) {
            self.text = text
            self.replaces = replaces
        }
    }

    public init(
        threadID: String,
        sessionID: String?,
        direction: Direction,
        kind: Kind,
        msgID: String,
        checksum: [UInt8],
        body: [UInt8],
        frameRest: [UInt8],
        rpcID: String? = nil,
        title: ThreadTitle? = nil
    ) {
        self.threadID = threadID
        self.sessionID = sessionID
        self.direction = direction
        self.kind = kind
        self.msgID = msgID
        self.checksum = checksum
        self.body = body
        self.frameRest = frameRest
        self.rpcID = rpcID
        self.title = title
    }
}

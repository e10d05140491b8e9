import Contracts
import EventLog
import NIOCore

/// One event of a tenant's feed, parsed once per replica: the fields filters look at and the
/// client frame, shared by every connection that gets it.
struct FeedEvent: Sendable {
    var seq: Int64
    var kind: BusEventKind
    var severity: BusSeverity
    var swarmID: String
    var agentID: String
    var frame: ByteBuffer
    /// For an ACP envelope: its thread and per-thread seq.
    var threadID = ""
    var threadSeq: Int64 = 0
    /// For a log: a hash of its swarm, agent, severity and message text (as rendered), so repeats can be
    /// collapsed without reading the frame per connection; 0 otherwise.
    var repeatKey = 0

    init(seq: Int64, kind: BusEventKind, severity: BusSeverity, swarmID: String, agentID: String, frame: ByteBuffer) {
        self.seq = seq
        self.kind = kind
        self.severity = severity
        self.swarmID = swarmID
        self.agentID = agentID
        self.frame = frame
    }

    /// An ACP event's envelope (seed 003's persisted form), cut from its frame.
    var envelope: ByteBuffer? { EventFrame.envelope(in: self.frame) }

    /// An event read from the log.
    init(_ logged: LoggedEvent) {
        self.init(
            seq: logged.seq,
            kind: logged.kind,
            severity: logged.severity,
            swarmID: logged.swarmID,
            agentID: logged.agentID,
            frame: logged.frame
        )
        self.threadID = logged.threadID
        self.threadSeq = logged.threadSeq
        if self.kind == .log { self.repeatKey = Self.repeatKey(swarm: self.swarmID, agent: self.agentID, severity: self.severity, frame: self.frame) }
    }

    init(_ envelope: BusEventEnvelope) {
        self.init(
            seq: envelope.seq,
            kind: envelope.kind,
            severity: envelope.severity,
            swarmID: envelope.swarmID,
            agentID: envelope.agentID,
            frame: ByteBuffer(bytes: envelope.frame)
        )
        self.threadID = envelope.threadID
        self.threadSeq = envelope.threadSeq
        if self.kind == .log { self.repeatKey = Self.repeatKey(swarm: self.swarmID, agent: self.agentID, severity: self.severity, frame: self.frame) }
    }

    /// The hash of a log frame's swarm, agent, severity and message text (as rendered); 0 when
    /// it has no message.
    static func repeatKey(swarm: String, agent: String, severity: BusSeverity, frame: ByteBuffer) -> Int {
        guard let message = EventFrame.message(in: frame) else { return 0 }
        var hasher = Hasher()
        hasher.combine(swarm)
        hasher.combine(agent)
        hasher.combine(severity.rawValue)
        for byte in message { hasher.combine(byte) }
        let key = hasher.finalize()
        return key == 0 ? 1 : key
    }
}

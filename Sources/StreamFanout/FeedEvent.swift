import Contracts
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

    /// An ACP event's envelope (seed 003's persisted form), cut from its frame: ingest renders
    /// it as the frame's last field, `…,"envelope":{…}}`, and every field before it is an
    /// escaped string or a number, so the first `,"envelope":{` is the one.
    var envelope: ByteBuffer? {
        let marker = Array(#","envelope":{"#.utf8)
        let bytes = self.frame.readableBytesView
        guard let start = bytes.firstRange(of: marker)?.lowerBound else { return nil }
        let offset = bytes.distance(from: bytes.startIndex, to: start) + marker.count - 1
        return self.frame.getSlice(at: self.frame.readerIndex + offset, length: self.frame.readableBytes - offset - 1)
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

    /// The hash of a log frame's swarm, agent, severity and `"message":"…"` bytes (escaped as
    /// rendered).
    static func repeatKey(swarm: String, agent: String, severity: BusSeverity, frame: ByteBuffer) -> Int {
        let marker = Array(#","message":""#.utf8)
        let bytes = frame.readableBytesView
        guard let start = bytes.firstRange(of: marker)?.upperBound else { return 0 }
        var hasher = Hasher()
        hasher.combine(swarm)
        hasher.combine(agent)
        hasher.combine(severity.rawValue)
        var index = start
        var escaped = false
        while index < bytes.endIndex {
            let byte = bytes[index]
            if !escaped && byte == UInt8(ascii: "\"") { break }
            escaped = !escaped && byte == UInt8(ascii: "\\")
            hasher.combine(byte)
            index = bytes.index(after: index)
        }
        let key = hasher.finalize()
        return key == 0 ? 1 : key
    }
}

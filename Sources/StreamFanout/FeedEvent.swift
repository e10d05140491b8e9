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

    init(seq: Int64, kind: BusEventKind, severity: BusSeverity, swarmID: String, agentID: String, frame: ByteBuffer) {
        self.seq = seq
        self.kind = kind
        self.severity = severity
        self.swarmID = swarmID
        self.agentID = agentID
        self.frame = frame
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
    }
}

public import Contracts
public import NIOCore

/// One event as the log holds it: the columns readers filter on, and its client frame.
public struct LoggedEvent: Sendable {
    public var seq: Int64
    public var kind: BusEventKind
    public var severity: BusSeverity
    public var swarmID: String
    public var agentID: String
    /// The client frame (``EventFrame``).
    public var frame: ByteBuffer
    /// For an ACP envelope: its thread and per-thread seq; empty and 0 otherwise.
    public var threadID = ""
    public var threadSeq: Int64 = 0

    public init(seq: Int64, kind: BusEventKind, severity: BusSeverity, swarmID: String, agentID: String, frame: ByteBuffer) {
        self.seq = seq
        self.kind = kind
        self.severity = severity
        self.swarmID = swarmID
        self.agentID = agentID
        self.frame = frame
    }

    /// An event from its stored columns: `kind` and `severity` as the log keeps them (an unknown
    /// value reads `unspecified`).
    init(seq: Int64, storedKind kind: Int16, storedSeverity severity: Int16, swarmID: String, agentID: String, frame: ByteBuffer) {
        self.init(
            seq: seq,
            kind: BusEventKind(rawValue: Int(kind)) ?? .unspecified,
            severity: BusSeverity(rawValue: Int(severity)) ?? .unspecified,
            swarmID: swarmID,
            agentID: agentID,
            frame: frame
        )
    }
}

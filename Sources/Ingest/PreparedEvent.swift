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
    var frameTail: [UInt8]

    /// The client frame for `seq`.
    func frame(seq: Int64) -> [UInt8] {
        var writer = JSONWriter(capacity: self.frameTail.count + 40)
        writer.raw("{\"seq\":")
        writer.integer(seq)
        writer.raw(",\"eventId\":\"")
        writer.integer(seq)
        writer.raw("\"")
        writer.bytes.append(contentsOf: self.frameTail)
        return writer.bytes
    }
}

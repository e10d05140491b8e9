import Contracts
import EventLog
import NIOCore
import ServiceKit
import Synchronization

/// One event of a tenant's feed, parsed once per replica: the event as the log holds it (the
/// fields filters look at and the client frame, shared by every connection that gets it), and
/// what stream-fanout derives from it once.
///
/// A class: a live event sits in every connection's queue and passes through its writer, and
/// each copy of a value with this many buffers and strings would retain and release each of
/// them; a reference is one retain.
@dynamicMemberLookup
final class FeedEvent: Sendable {
    let event: LoggedEvent
    /// A live event's WebSocket text frame (header and frame), made once for every connection
    /// that gets the event alone (`WebSocketFrameWriter.send(framed:)`); `event.frame` is a
    /// slice of it. nil for an event read from the log.
    let wire: ByteBuffer?
    /// A live event's ``repeatKey``, worked out once on the feed for every connection; an event
    /// read from the log works it out when asked (collapsing is opt-in: a replay seldom asks).
    private let knownRepeatKey: Int?
    /// When a live event's NATS batch reached the feed (for `fanout_delivery_seconds`); nil for
    /// an event read from the log. NIO's deadline, not `ContinuousClock.Instant`: the standard
    /// library's types are resilient, and reading one goes through the runtime's value
    /// witnesses, per event per connection.
    let received: NIODeadline?
    /// ``deflatedWire``, once a connection that agreed to compression asked for it.
    private let deflated = Mutex<ByteBuffer?>(nil)

    /// A live event's frame for the connections that agreed to `permessage-deflate`:
    /// compressed once, on first use, and shared by all of them as ``wire`` is (the server
    /// never takes its compression context over from one message to the next). nil for an
    /// event read from the log.
    var deflatedWire: ByteBuffer? {
        guard self.wire != nil else { return nil }
        return self.deflated.withLock { cached in
            if let cached { return cached }
            let frame = WebSocketDeflate.frame(.text, self.event.frame)
            cached = frame
            return frame
        }
    }

    /// For a log: a hash of its swarm, agent, severity and message text (as rendered), so
    /// repeats can be collapsed without reading the frame per connection; 0 otherwise.
    var repeatKey: Int {
        if let known = self.knownRepeatKey { return known }
        return Self.repeatKey(of: self.event)
    }

    subscript<Value>(dynamicMember field: KeyPath<LoggedEvent, Value>) -> Value {
        self.event[keyPath: field]
    }

    /// An event read from the log.
    init(_ event: LoggedEvent) {
        self.event = event
        self.wire = nil
        self.knownRepeatKey = nil
        self.received = nil
    }

    /// An event from the live feed, whose NATS batch arrived at `received`.
    init(_ envelope: BusEventEnvelope, received: NIODeadline) {
        let length = envelope.frame.count
        var wire = ByteBuffer()
        wire.reserveCapacity(WebSocketFraming.headerLength(payload: length) + length)
        let header = WebSocketFraming.writeHeader(.text, payload: length, into: &wire)
        wire.writeBytes(envelope.frame)
        var event = LoggedEvent(
            seq: envelope.seq,
            kind: envelope.kind,
            severity: envelope.severity,
            swarmID: envelope.swarmID,
            agentID: envelope.agentID,
            frame: wire.getSlice(at: wire.readerIndex + header, length: length)!
        )
        event.threadID = envelope.threadID
        event.threadSeq = envelope.threadSeq
        self.event = event
        self.wire = wire
        self.knownRepeatKey = Self.repeatKey(of: event)
        self.received = received
    }

    private static func repeatKey(of event: LoggedEvent) -> Int {
        guard event.kind == .log else { return 0 }
        return Self.repeatKey(swarm: event.swarmID, agent: event.agentID, severity: event.severity, frame: event.frame)
    }

    /// An ACP event's envelope (seed 003's persisted form), cut from its frame.
    var envelope: ByteBuffer? { EventFrame.envelope(in: self.event.frame) }

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

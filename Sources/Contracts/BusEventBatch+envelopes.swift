import SwiftProtobuf

extension BusEventBatch {
    /// The events one message on an event subject carries, in seq order: a batch's (on
    /// ``Subjects/eventBatch(tenant:)``) or the one event's (on ``Subjects/event(tenant:swarm:agent:kind:)``).
    /// Every consumer of the live feed reads messages through this, so both shapes of the bus
    /// contract are read the same way.
    /// The subject decides the shape; the payload is not checked against it beyond decoding
    /// (an envelope read as a batch holds no events, a batch read as an envelope is empty:
    /// consumers drop an envelope of no tenant).
    /// - Throws: SwiftProtobuf's decoding error for a payload that is not protobuf.
    public static func envelopes(in payload: [UInt8], subject: String, subjects: Subjects) throws -> [BusEventEnvelope] {
        if subjects.isEventBatch(subject) {
            return try BusEventBatch(serializedBytes: payload).events
        }
        return [try BusEventEnvelope(serializedBytes: payload)]
    }
}

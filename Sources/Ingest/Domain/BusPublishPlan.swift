/// How one commit's events go on the bus (bus contract v1, `proto/swarmdeck/bus/v1/event.proto`):
/// in seq order, each ACP message alone on its own subject (approvals subscribes to those
/// alone), every other run of events as batches whose payload stays within the server's
/// `max_payload`. Without batches (`ingest.bus-batches=false`, for a rolling upgrade), every
/// event alone.
struct BusPublishPlan: Equatable, Sendable {
    /// One message: a run of events as a `BusEventBatch`, or one event as a `BusEventEnvelope`.
    enum Part: Equatable, Sendable {
        case batch(Range<Int>)
        case single(Int)
    }

    /// What a batch adds to each envelope it holds: the field's tag (two bytes for field 101)
    /// and the envelope's length (at most five).
    static let perEnvelopeOverhead = 7

    let parts: [Part]

    /// - Parameters:
    ///   - sizes: each event's encoded envelope size, or more (never less).
    ///   - isACP: whether each event is an ACP message.
    ///   - budget: a batch's payload, at most; an event larger than that on its own goes alone
    ///     (the publish fails, and is counted, if the server refuses it).
    ///   - batches: false publishes every event alone.
    init(sizes: [Int], isACP: [Bool], budget: Int, batches: Bool) {
        precondition(sizes.count == isACP.count)
        var parts: [Part] = []
        var start = 0
        var bytes = 0
        func close(at end: Int) {
            if end > start { parts.append(.batch(start..<end)) }
        }
        for index in sizes.indices {
            let size = sizes[index] + Self.perEnvelopeOverhead
            if !batches || isACP[index] || size > budget {
                close(at: index)
                parts.append(.single(index))
                start = index + 1
                bytes = 0
                continue
            }
            if bytes + size > budget {
                close(at: index)
                start = index
                bytes = 0
            }
            bytes += size
        }
        close(at: sizes.count)
        self.parts = parts
    }
}

/// One agent's command queue as a cursor over the control stream, with no consumer on the
/// server: what the walk from the cursor does with each stored message, and how far the cursor
/// moves once commands are done. Pure: ``AgentQueues`` keeps it in Postgres, ``CommandBus``
/// reads the stream.
///
/// Every command for the agent at or below ``floor`` (a stream sequence) is done. Above it, each
/// command that was delivered has a ``Delivery``: done (acknowledged, discarded, or gone from the
/// stream), or in flight until its redelivery is due. Commands are delivered in stream order, each
/// recorded as it is, so the deliveries cover every stored command from the floor up to the
/// highest one delivered; the floor moves up over the done ones at the bottom.
struct AgentQueue: Sendable, Hashable {
    /// A delivered command above the floor.
    struct Delivery: Sendable, Hashable {
        /// Acknowledged, discarded, or gone from the stream.
        var done: Bool
        /// How long until it may be delivered again (zero or less: due now).
        var dueIn: Duration

        init(done: Bool, dueIn: Duration) {
            self.done = done
            self.dueIn = dueIn
        }
    }

    /// What the walk does with the next stored message.
    enum Step: Sendable, Hashable {
        /// Done, or in flight and not yet due: look past it.
        case skip
        /// New, or due again: deliver it (if this replica's claim on it wins).
        case deliver
        /// New, with `maxInFlight` commands in flight already: deliver nothing more now.
        case full
    }

    var floor: UInt64
    var deliveries: [UInt64: Delivery]

    init(floor: UInt64 = 0, deliveries: [UInt64: Delivery] = [:]) {
        self.floor = floor
        self.deliveries = deliveries
    }

    /// Commands delivered and neither done nor due again.
    var inFlight: Int {
        self.deliveries.values.count { !$0.done && $0.dueIn > .zero }
    }

    /// How long until the first command in flight is due again; nil when none is in flight.
    var nextDue: Duration? {
        self.deliveries.values.filter { !$0.done && $0.dueIn > .zero }.map(\.dueIn).min()
    }

    /// What to do with the agent's stored message at `sequence`.
    func step(at sequence: UInt64, maxInFlight: Int) -> Step {
        if sequence <= self.floor { return .skip }
        if let delivery = self.deliveries[sequence] {
            return delivery.done || delivery.dueIn > .zero ? .skip : .deliver
        }
        return self.inFlight >= maxInFlight ? .full : .deliver
    }

    /// The commands delivered and not done in `range`, a stretch where the stream holds none of
    /// the agent's any more (the walk read past it): they expired or were pushed out, and count
    /// as done.
    func gone(in range: Range<UInt64>) -> [UInt64] {
        self.deliveries.filter { !$0.value.done && range.contains($0.key) }.map(\.key).sorted()
    }

    /// Marks `sequences` done and moves the floor up over the done deliveries at the bottom,
    /// dropping them. Returns the new floor.
    @discardableResult
    mutating func complete(_ sequences: some Sequence<UInt64>) -> UInt64 {
        for sequence in sequences where self.deliveries[sequence] != nil {
            self.deliveries[sequence]?.done = true
        }
        for sequence in self.deliveries.keys.sorted() {
            guard self.deliveries[sequence]?.done == true else { break }
            self.floor = max(self.floor, sequence)
            self.deliveries[sequence] = nil
        }
        // Anything left at or below the floor (it only moves up) is done by definition.
        self.deliveries = self.deliveries.filter { $0.key > self.floor }
        return self.floor
    }
}

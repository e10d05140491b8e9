/// One tool (or skill) of one swarm: calls, errors and latencies in five-minute slots for the
/// last hour and hour slots for the last day, and the spike detector fed one sample per
/// sampling interval. Memory is bounded: 12 + 24 slots, each with a lazily allocated
/// ``LatencyHistogram``.
struct SkillWindow: Sendable {
    struct Slot: Sendable {
        /// The slot's start, in slot units since the epoch.
        var index: Int64
        var calls = 0
        var errors = 0
        var latency = LatencyHistogram()
    }

    struct Stats: Sendable, Equatable {
        var calls: Int
        var errors: Int
        var p95LatencyMs: Double?
        var errorRate: Double { self.calls > 0 ? Double(self.errors) / Double(self.calls) : 0 }
        var successRate: Double { self.calls > 0 ? 1 - self.errorRate : 1 }
    }

    static let fineSlotMilliseconds: Int64 = 300_000
    static let fineSlots = 12
    static let coarseSlotMilliseconds: Int64 = 3_600_000
    static let coarseSlots = 24

    let swarmID: String
    let tool: String
    private(set) var fine: [Slot] = []
    private(set) var coarse: [Slot] = []
    private(set) var detector = SpikeDetector()
    /// The open sample: its interval index and counts.
    private(set) var sampleIndex: Int64 = -1
    private(set) var sampleCalls = 0
    private(set) var sampleErrors = 0
    /// Milliseconds since the epoch of the last call.
    private(set) var lastCallAt: Int64 = 0

    init(swarmID: String, tool: String) {
        self.swarmID = swarmID
        self.tool = tool
    }

    /// A call that ended at `at` (milliseconds since the epoch).
    mutating func record(ok: Bool, latencyMs: Double?, at: Int64, sampleMilliseconds: Int64, parameters: SpikeDetector.Parameters) {
        self.closeSamples(through: at, sampleMilliseconds: sampleMilliseconds, parameters: parameters)
        Self.add(&self.fine, index: at / Self.fineSlotMilliseconds, keep: Self.fineSlots, ok: ok, latencyMs: latencyMs)
        Self.add(&self.coarse, index: at / Self.coarseSlotMilliseconds, keep: Self.coarseSlots, ok: ok, latencyMs: latencyMs)
        self.sampleCalls += 1
        if !ok { self.sampleErrors += 1 }
        self.lastCallAt = max(self.lastCallAt, at)
    }

    /// Closes the samples whose interval ended before `now`, feeding the detector; answers
    /// whether the spike condition held at the last sample with calls that this closed (or, if
    /// it closed none, holds now). So a spike is reported even when the evaluation comes after
    /// the quiet interval that follows it, which clears the condition for the next one.
    @discardableResult
    mutating func closeSamples(through now: Int64, sampleMilliseconds: Int64, parameters: SpikeDetector.Parameters) -> Bool {
        let current = now / sampleMilliseconds
        if self.sampleIndex < 0 { self.sampleIndex = current }
        var held = self.detector.breaching
        if current > self.sampleIndex {
            held = self.detector.observe(calls: self.sampleCalls, errors: self.sampleErrors, parameters)
            // Intervals with no call at all between then and now: one empty sample is enough.
            if current > self.sampleIndex + 1 { self.detector.observe(calls: 0, errors: 0, parameters) }
            self.sampleIndex = current
            self.sampleCalls = 0
            self.sampleErrors = 0
        }
        return held
    }

    var spiking: Bool { self.detector.breaching }

    /// The last hour (`hour`) or day at `now`.
    func stats(hour: Bool, now: Int64) -> Stats {
        let (slots, width, keep) =
            hour ? (self.fine, Self.fineSlotMilliseconds, Self.fineSlots) : (self.coarse, Self.coarseSlotMilliseconds, Self.coarseSlots)
        let oldest = now / width - Int64(keep) + 1
        var stats = Stats(calls: 0, errors: 0)
        var latency = LatencyHistogram()
        for slot in slots where slot.index >= oldest {
            stats.calls += slot.calls
            stats.errors += slot.errors
            latency.add(slot.latency)
        }
        stats.p95LatencyMs = latency.quantile(0.95)
        return stats
    }

    /// The slots of the last hour (`hour`) or day, oldest first, empty ones included.
    func series(hour: Bool, now: Int64) -> [(start: Int64, stats: Stats)] {
        let (slots, width, keep) =
            hour ? (self.fine, Self.fineSlotMilliseconds, Self.fineSlots) : (self.coarse, Self.coarseSlotMilliseconds, Self.coarseSlots)
        let last = now / width
        return ((last - Int64(keep) + 1)...last).map { index in
            guard let slot = slots.first(where: { $0.index == index }) else { return (index * width, Stats(calls: 0, errors: 0)) }
            return (index * width, Stats(calls: slot.calls, errors: slot.errors, p95LatencyMs: slot.latency.quantile(0.95)))
        }
    }

    private static func add(_ slots: inout [Slot], index: Int64, keep: Int, ok: Bool, latencyMs: Double?) {
        if let position = slots.lastIndex(where: { $0.index == index }) {
            slots[position].calls += 1
            if !ok { slots[position].errors += 1 }
            if let latencyMs { slots[position].latency.record(latencyMs) }
            return
        }
        // A late call for a slot already dropped is counted nowhere.
        if let newest = slots.last?.index, index < newest - Int64(keep) + 1 { return }
        var slot = Slot(index: index, calls: 1, errors: ok ? 0 : 1)
        if let latencyMs { slot.latency.record(latencyMs) }
        slots.append(slot)
        slots.sort { $0.index < $1.index }
        if slots.count > keep { slots.removeFirst(slots.count - keep) }
    }
}

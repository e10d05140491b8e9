/// One swarm's recent activity in one-minute slots (the last ten): events, errors (severity
/// error or worse) and cost, for its error rate and throughput (last five minutes) and its cost
/// rate (last ten minutes, per hour).
struct SwarmWindow: Sendable {
    struct Minute: Sendable {
        var index: Int64
        var events = 0
        var errors = 0
        var costUsd = 0.0
    }

    static let minutes = 10
    private(set) var slots: [Minute] = []
    /// Milliseconds since the epoch of the last event.
    private(set) var lastEventAt: Int64 = 0

    mutating func record(isError: Bool, costUsd: Double, at: Int64) {
        let index = at / 60_000
        self.lastEventAt = max(self.lastEventAt, at)
        if let position = self.slots.lastIndex(where: { $0.index == index }) {
            self.slots[position].events += 1
            if isError { self.slots[position].errors += 1 }
            self.slots[position].costUsd += costUsd
            return
        }
        if let newest = self.slots.last?.index, index <= newest - Int64(Self.minutes) { return }
        self.slots.append(Minute(index: index, events: 1, errors: isError ? 1 : 0, costUsd: costUsd))
        self.slots.sort { $0.index < $1.index }
        if self.slots.count > Self.minutes { self.slots.removeFirst(self.slots.count - Self.minutes) }
    }

    private func sum(lastMinutes: Int64, now: Int64) -> Minute {
        let oldest = now / 60_000 - lastMinutes + 1
        var total = Minute(index: oldest)
        for slot in self.slots where slot.index >= oldest {
            total.events += slot.events
            total.errors += slot.errors
            total.costUsd += slot.costUsd
        }
        return total
    }

    /// Events of the last five minutes (0 when none).
    func events(now: Int64) -> Int { self.sum(lastMinutes: 5, now: now).events }

    /// Errors over events in the last five minutes.
    func errorRate(now: Int64) -> Double {
        let total = self.sum(lastMinutes: 5, now: now)
        return total.events > 0 ? Double(total.errors) / Double(total.events) : 0
    }

    func eventsPerMinute(now: Int64) -> Double { Double(self.sum(lastMinutes: 5, now: now).events) / 5 }

    /// Dollars per hour at the rate of the last ten minutes.
    func costPerHour(now: Int64) -> Double { self.sum(lastMinutes: 10, now: now).costUsd * 6 }
}

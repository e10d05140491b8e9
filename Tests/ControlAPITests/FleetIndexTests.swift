import Foundation
import Testing

@testable import ControlAPI

@Suite("Fleet index")
struct FleetIndexTests {
    @Test("events after the snapshot count once even out of seq order; an older state event does not replace a newer one")
    func outOfOrder() {
        let index = FleetIndex()
        let now = Date()
        var loaded = FleetIndex.AgentRecord(agentID: "a1", swarmID: "s1", stateChangedAt: now, lastSeenAt: now)
        loaded.state = "running"
        loaded.stateSeq = 5
        loaded.minutes.add(at: now, events: 10, errors: 1)
        index.load(heads: ["t": 10], agents: ["t": [loaded]])

        // At or below the snapshot's head: already counted.
        index.apply(tenant: "t", seq: 9, swarmID: "s1", agentID: "a1", isError: true, committedAt: now, state: ("error", nil, false))
        #expect(index.agent(tenant: "t", id: "a1")?.minutes.lastHour(now: now).events == 10)
        #expect(index.agent(tenant: "t", id: "a1")?.state == "running")

        // 12 (paused) overtakes 11 (running): both count, paused stays.
        index.apply(tenant: "t", seq: 12, swarmID: "s1", agentID: "a1", isError: false, committedAt: now, state: ("paused", nil, false))
        index.apply(tenant: "t", seq: 11, swarmID: "s1", agentID: "a1", isError: true, committedAt: now, state: ("running", "old", false))
        let agent = index.agent(tenant: "t", id: "a1")
        #expect(agent?.minutes.lastHour(now: now).events == 12)
        #expect(agent?.minutes.lastHour(now: now).errors == 2)
        #expect(agent?.state == "paused" && agent?.stateSeq == 12)

        // Another tenant's events never touch this one.
        index.apply(tenant: "u", seq: 1, swarmID: "s1", agentID: "a1", isError: false, committedAt: now, state: ("terminated", nil, false))
        #expect(index.agent(tenant: "t", id: "a1")?.state == "paused")
        #expect(index.agents(tenant: "u").count == 1)
    }

    @Test("minute counts cover the last hour only")
    func lastHour() {
        var counts = FleetIndex.MinuteCounts()
        let now = Date()
        counts.add(at: now.addingTimeInterval(-7200), events: 5, errors: 5)
        counts.add(at: now.addingTimeInterval(-1800), events: 3, errors: 1)
        counts.add(at: now, events: 2, errors: 0)
        #expect(counts.lastHour(now: now) == (events: 5, errors: 1))
        #expect(counts.lastHour(now: now.addingTimeInterval(3540)) == (events: 2, errors: 0))
        #expect(counts.lastHour(now: now.addingTimeInterval(3600)) == (events: 0, errors: 0))
    }
}

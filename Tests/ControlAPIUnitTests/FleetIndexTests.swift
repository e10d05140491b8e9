import EventLog
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
        index.apply(tenant: "t", seq: 9, swarmID: "s1", agentID: "a1", isError: true, committedAt: now, state: ("error", nil, nil))
        #expect(index.agent(tenant: "t", id: "a1")?.minutes.lastHour(now: now).events == 10)
        #expect(index.agent(tenant: "t", id: "a1")?.state == "running")

        // 12 (paused) overtakes 11 (running): both count, paused stays.
        index.apply(tenant: "t", seq: 12, swarmID: "s1", agentID: "a1", isError: false, committedAt: now, state: ("paused", nil, nil))
        index.apply(tenant: "t", seq: 11, swarmID: "s1", agentID: "a1", isError: true, committedAt: now, state: ("running", "old", nil))
        let agent = index.agent(tenant: "t", id: "a1")
        #expect(agent?.minutes.lastHour(now: now).events == 12)
        #expect(agent?.minutes.lastHour(now: now).errors == 2)
        #expect(agent?.state == "paused" && agent?.stateSeq == 12)

        // The agent moved to s2 at seq 14: seq 13, of s1, arriving late does not move it back.
        index.apply(tenant: "t", seq: 14, swarmID: "s2", agentID: "a1", isError: false, committedAt: now, state: nil)
        index.apply(tenant: "t", seq: 13, swarmID: "s1", agentID: "a1", isError: false, committedAt: now, state: nil)
        #expect(index.agent(tenant: "t", id: "a1")?.swarmID == "s2")
        #expect(index.agents(tenant: "t", swarm: "s1").isEmpty)

        // Another tenant's events never touch this one.
        index.apply(tenant: "u", seq: 1, swarmID: "s1", agentID: "a1", isError: false, committedAt: now, state: ("terminated", nil, nil))
        #expect(index.agent(tenant: "t", id: "a1")?.state == "paused")
        #expect(index.agents(tenant: "u").count == 1)
    }

    @Test("the tmux session a state event names is the agent's terminal until a state event names none; names that are not short strings are none")
    func terminal() throws {
        let index = FleetIndex()
        let now = Date()
        let attrs = try #require(
            EventFrame.state(in: Array(#"{"state":"running","attrs":{"worker":true,"tmuxSession":"demo-1","host":"build-1"}}"#.utf8))
        )
        #expect(attrs.attrs == EventFrame.State.Attributes(worker: true, tmuxSession: "demo-1", host: "build-1"))
        index.apply(tenant: "t", seq: 1, swarmID: "s", agentID: "a", isError: false, committedAt: now, state: ("running", nil, attrs.attrs))
        #expect(index.agent(tenant: "t", id: "a")?.tmuxSession == "demo-1" && index.agent(tenant: "t", id: "a")?.host == "build-1")
        #expect(index.agent(tenant: "t", id: "a")?.acceptsRequests == true)
        index.apply(tenant: "t", seq: 2, swarmID: "s", agentID: "a", isError: false, committedAt: now, state: ("running", nil, nil))
        #expect(index.agent(tenant: "t", id: "a")?.tmuxSession == nil && index.agent(tenant: "t", id: "a")?.acceptsRequests == false)

        let odd = try #require(EventFrame.state(in: Array(#"{"state":"running","attrs":{"worker":"yes","tmuxSession":7,"host":""}}"#.utf8)))
        #expect(odd.attrs == EventFrame.State.Attributes())
        let long = String(repeating: "x", count: 65)
        let tooLong = try #require(EventFrame.state(in: Array(#"{"state":"running","attrs":{"tmuxSession":"\#(long)"}}"#.utf8)))
        #expect(tooLong.attrs?.tmuxSession == nil)
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

    @Test("a tenant's agents are bounded: the longest-silent make room, live ones are never evicted, other tenants are untouched")
    func boundedPerTenant() {
        let index = FleetIndex(maxAgentsPerTenant: 20, offlineAfter: .seconds(60))
        let now = Date()
        var seq: Int64 = 0
        func see(_ tenant: String, _ agent: String, at date: Date) {
            seq += 1
            index.apply(tenant: tenant, seq: seq, swarmID: "s", agentID: agent, isError: false, committedAt: date, state: nil)
        }
        for number in 0..<10 { see("t", "old-\(number)", at: now.addingTimeInterval(-3600 + Double(number))) }
        for number in 0..<10 { see("t", "live-\(number)", at: now) }
        see("u", "other", at: now.addingTimeInterval(-3600))
        #expect(index.agents(tenant: "t").count == 20)

        // A new agent evicts the longest-silent tenth (two), not the live ones.
        see("t", "new", at: now)
        let ids = Set(index.agents(tenant: "t").map(\.agentID))
        #expect(ids.count == 19 && ids.contains("new"))
        #expect(!ids.contains("old-0") && !ids.contains("old-1") && ids.contains("old-2"))
        #expect((0..<10).allSatisfy { ids.contains("live-\($0)") })
        #expect(index.agents(tenant: "u").count == 1)

        // Full of live agents: a newcomer is not indexed (and nothing live is lost).
        let crowded = FleetIndex(maxAgentsPerTenant: 10, offlineAfter: .seconds(60))
        for number in 0..<10 {
            crowded.apply(tenant: "t", seq: Int64(number + 1), swarmID: "s", agentID: "a\(number)", isError: false, committedAt: now, state: nil)
        }
        crowded.apply(tenant: "t", seq: 11, swarmID: "s", agentID: "flood", isError: false, committedAt: now, state: nil)
        #expect(crowded.agents(tenant: "t").count == 10 && crowded.agent(tenant: "t", id: "flood") == nil)
    }

    @Test("task summaries are cut to their bound")
    func taskSummaryBound() {
        let index = FleetIndex()
        let long = String(repeating: "x", count: 10_000)
        index.apply(tenant: "t", seq: 1, swarmID: "s", agentID: "a", isError: false, committedAt: Date(), state: ("running", long, nil))
        let summary = index.agent(tenant: "t", id: "a")?.taskSummary
        #expect(summary?.count == FleetIndex.maxTaskSummary && summary?.hasSuffix("…") == true)
    }
}

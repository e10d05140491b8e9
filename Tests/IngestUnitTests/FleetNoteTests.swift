import Contracts
import Testing

@testable import EventLog

@Suite("What an append tells the fleet: the state events sparse, a group summed up per agent")
struct FleetNoteTests {
    static func event(
        _ agent: String,
        swarm: String = "s",
        kind: BusEventKind = .log,
        severity: BusSeverity = .info,
        tail: String = "}"
    )
        -> PreparedEvent
    {
        PreparedEvent(
            msgID: "m",
            swarmID: swarm,
            agentID: agent,
            kind: kind,
            severity: severity,
            occurredAtMilliseconds: 0,
            frameTail: Array(tail.utf8)
        )
    }

    static func state(_ agent: String, _ fields: String, swarm: String = "s") -> PreparedEvent {
        Self.event(agent, swarm: swarm, kind: .state, tail: #","type":"state","# + fields + "}")
    }

    @Test("only state events with a state are noted, by their position from 1; a NUL is dropped and a long state cut")
    func sparseStates() {
        let long = String(repeating: "x", count: 200)
        let states = FleetNote.States([
            Self.event("a"),
            Self.state("a", #""state":"run\u0000ning","taskSummary":"t","attrs":{"worker":true,"tmuxSession":"sd-a","host":"h"}"#),
            Self.state("b", #""taskSummary":"no state""#),
            Self.state("c", #""state":"\#(long)""#),
            Self.state("d", #""state":"""#),
        ])
        #expect(states.ordinals == [2, 4])
        #expect(states.states == ["running", String(repeating: "x", count: EventLogAppender.maxFleetState - 1) + "…"])
        #expect(states.summaries == ["t", ""] && states.workers == [true, false])
        #expect(states.tmuxSessions == ["sd-a", ""] && states.hosts == ["h", ""])
    }

    @Test("per agent: the latest swarm and seq, events and errors, the latest state's fields and the latest summary given")
    func perAgent() {
        let committed = [
            CommittedEvent(seq: 3, event: Self.state("a", #""state":"waiting""#, swarm: "s2")),
            CommittedEvent(seq: 1, event: Self.state("a", #""state":"running","taskSummary":"first","attrs":{"worker":true}"#)),
            CommittedEvent(seq: 2, event: Self.event("a", severity: .error)),
            CommittedEvent(seq: 4, event: Self.event("", severity: .fatal)),
            CommittedEvent(seq: 5, event: Self.event("b")),
        ]
        let agents = FleetNote.Agents(committed)
        #expect(agents.agents == ["a", "b"])
        #expect(agents.swarms == ["s2", "s"] && agents.lastSeqs == [3, 5])
        #expect(agents.events == [3, 1] && agents.errors == [1, 0])
        #expect(agents.stateSeqs == [3, 0] && agents.states == ["waiting", ""])
        // The latest state event gave no summary: the one before did. Nor a worker flag: none.
        #expect(agents.summaries == ["first", ""] && agents.workers == [false, false])
    }
}

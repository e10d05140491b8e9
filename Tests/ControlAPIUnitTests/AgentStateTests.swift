import ControlAPIContract
import Testing

@testable import ControlAPI

@Suite("AgentState: the reported state mapped, silence, and seed 000's four statuses")
struct AgentStateTests {
    typealias State = Components.Schemas.AgentState

    @Test("reported states map to the finer state; silence is offline, except for a terminated agent")
    func states() {
        func state(_ reported: String?, silent: Double = 0) -> State { .of(reported: reported, silentFor: silent, offlineAfter: 60) }
        #expect(state(nil) == .idle && state("idle") == .idle)
        #expect(state("Running") == .running && state("thinking") == .running)
        #expect(state("stopped") == .paused && state("waiting_approval") == .waiting && state("crashed") == .error)
        #expect(state("exited") == .terminated && state("completed", silent: 1000) == .terminated)
        #expect(state("running", silent: 61) == .offline && state("running", silent: 60) == .running)
    }

    @Test("every state reads as one of seed 000's running, paused, error, waiting")
    func seedStatuses() {
        let expected: [State: Components.Schemas.AgentStatus] = [
            .running: .running, .paused: .paused, .waiting: .waiting, .error: .error,
            .terminated: .paused, .idle: .waiting, .offline: .error,
        ]
        for state in State.allCases { #expect(state.status == expected[state], "\(state)") }
        #expect(Set(State.allCases.map(\.status).map(\.rawValue)) == ["running", "paused", "error", "waiting"])
    }
}

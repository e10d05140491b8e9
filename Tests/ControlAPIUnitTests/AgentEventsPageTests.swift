import Testing

@testable import ControlAPI

@Suite("AgentEventsPage: where the page before an answer of an agent's events starts")
struct AgentEventsPageTests {
    @Test("a full read, or one the bytes cut, has a page before it; a short read does not; nothing answered has none")
    func nextBefore() {
        #expect(AgentEventsPage.nextBefore(oldest: 4, answered: 3, read: 3, limit: 3) == 4)
        #expect(AgentEventsPage.nextBefore(oldest: 4, answered: 3, read: 3, limit: 50) == nil)
        #expect(AgentEventsPage.nextBefore(oldest: 9, answered: 1, read: 3, limit: 50) == 9)
        #expect(AgentEventsPage.nextBefore(oldest: nil, answered: 0, read: 0, limit: 50) == nil)
    }
}

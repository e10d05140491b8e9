import Contracts
import Foundation
import Testing

@Suite("Subjects")
struct SubjectsTests {
    @Test("event subjects carry tenant, swarm, agent and kind, and parse back")
    func eventRoundTrip() throws {
        let subjects = try Subjects(prefix: "sd")
        let subject = subjects.event(tenant: "acme", swarm: "swarm-1", agent: "agent_7", kind: .toolCall)
        #expect(subject == "sd.ev.acme.swarm-1.agent_7.tool_call")
        #expect(subjects.parseEvent(subject) == EventSubject(tenant: "acme", swarm: "swarm-1", agent: "agent_7", kind: .toolCall))
        #expect(subjects.events(tenant: "acme") == "sd.ev.acme.>")
    }

    @Test(
        "identifiers that would break a subject are encoded and decode back",
        arguments: ["a.b", "*", ">", "with space", "ümlaut", "", "~tilde", "x.*.>"]
    )
    func hostileIdentifiers(identifier: String) throws {
        let subjects = try Subjects(prefix: "test.p1")
        let subject = subjects.event(tenant: identifier, swarm: "s", agent: identifier, kind: .log)
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        #expect(tokens.count == 7)
        #expect(tokens.allSatisfy { !$0.isEmpty && $0 != "*" && $0 != ">" && !$0.contains(" ") })
        let parsed = try #require(subjects.parseEvent(subject))
        #expect(parsed.tenant == identifier)
        #expect(parsed.agent == identifier)
    }

    @Test("another prefix's subjects are not parsed as ours")
    func prefixIsolation() throws {
        let ours = try Subjects(prefix: "t1")
        let theirs = try Subjects(prefix: "t2")
        #expect(ours.parseEvent(theirs.event(tenant: "a", swarm: "b", agent: "c", kind: .log)) == nil)
        #expect(ours.controlStreamName != theirs.controlStreamName)
    }

    @Test("a prefix with wildcards or empty tokens is refused", arguments: ["", "a..b", "a.*", ">", "a b", ".a"])
    func badPrefix(prefix: String) {
        #expect(throws: ContractsError.self) { try Subjects(prefix: prefix) }
    }

    @Test("malformed tokens do not decode")
    func malformedTokens() {
        #expect(SubjectToken.decode("~4") == nil)
        #expect(SubjectToken.decode("~zz") == nil)
        #expect(SubjectToken.decode("a*b") == nil)
        #expect(SubjectToken.decode("~FF") == nil)  // not UTF-8 on its own
    }
}

import Contracts
import Foundation
import Testing

@Suite("Subjects")
struct SubjectsTests {
    @Test("event subjects carry tenant, swarm, agent and kind, and parse back")
    func eventRoundTrip() throws {
        let subjects = try Subjects(prefix: "sd")
        let subject = subjects.event(tenant: "acme", swarm: "swarm-1", agent: "agent_7", kind: .toolCall)
        let partition = EventPartition(tenant: "acme")
        #expect(subject == "sd.ev.\(partition).acme.swarm-1.agent_7.tool_call")
        #expect(subjects.parseEvent(subject) == EventSubject(tenant: "acme", swarm: "swarm-1", agent: "agent_7", kind: .toolCall))
        #expect(subjects.events(tenant: "acme") == "sd.ev.\(partition).acme.>")
        #expect(subjects.events(partition: partition) == "sd.ev.\(partition).>")
        // Another partition than the tenant's, or one written otherwise, is not an event subject.
        let other = EventPartition((partition.index + 1) % EventPartition.count)!
        #expect(subjects.parseEvent("sd.ev.\(other).acme.swarm-1.agent_7.tool_call") == nil)
        #expect(subjects.parseEvent("sd.ev.0\(partition).acme.swarm-1.agent_7.tool_call") == nil)
        #expect(subjects.parseEvent("sd.ev.acme.swarm-1.agent_7.tool_call") == nil)
        #expect(subjects.parseEvent("sd.ev.\(EventPartition.count).acme.swarm-1.agent_7.tool_call") == nil)
    }

    @Test("tenants spread over the event partitions: a thousand ids like the live harness's, and ids that differ only in same-parity digits")
    func partitionsSpread() {
        var state: UInt64 = 0x5EED
        let random = (0..<1000).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            return "tenant-" + String(mixed ^ (mixed >> 31), radix: 36)
        }
        // tenant-N with every digit even: plain FNV-1a modulo a power of two sends them to the even partitions only.
        let evenDigits = (0..<50_000).map { "tenant-" + String($0) }.filter { $0.dropFirst(7).allSatisfy { "02468".contains($0) } }
        for ids in [random, evenDigits] {
            var counts = [Int](repeating: 0, count: EventPartition.count)
            for id in ids { counts[EventPartition(tenant: id).index] += 1 }
            let share = Double(ids.count) / Double(EventPartition.count)
            // Every partition within half a share of an even one.
            #expect(counts.allSatisfy { abs(Double($0) - share) <= share * 0.5 }, "\(ids.count) ids over the partitions: \(counts)")
        }
        #expect(EventPartition.all.map(\.index) == Array(0..<EventPartition.count))
        #expect(EventPartition(-1) == nil && EventPartition(EventPartition.count) == nil)
    }

    @Test(
        "identifiers that would break a subject are encoded and decode back",
        arguments: ["a.b", "*", ">", "with space", "ümlaut", "", "~tilde", "x.*.>"]
    )
    func hostileIdentifiers(identifier: String) throws {
        let subjects = try Subjects(prefix: "test.p1")
        let subject = subjects.event(tenant: identifier, swarm: "s", agent: identifier, kind: .log)
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        #expect(tokens.count == 8)
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

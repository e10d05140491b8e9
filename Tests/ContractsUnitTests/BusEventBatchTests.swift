import Contracts
import Foundation
import SwiftProtobuf
import Testing

@Suite("Bus event batches")
struct BusEventBatchTests {
    static func envelope(_ seq: Int64, tenant: String = "acme") -> BusEventEnvelope {
        var envelope = BusEventEnvelope()
        envelope.tenantID = tenant
        envelope.seq = seq
        envelope.swarmID = "s"
        envelope.agentID = "a"
        envelope.kind = .log
        envelope.frame = Data(#"{"seq":\#(seq)}"#.utf8)
        return envelope
    }

    @Test("a batch subject is the tenant's, under the tenant's and its partition's wildcard, and not an event subject")
    func batchSubject() throws {
        let subjects = try Subjects(prefix: "test.p1")
        for tenant in ["acme", "a.b", "*", ">", "with space", "batch"] {
            let subject = subjects.eventBatch(tenant: tenant)
            #expect(subjects.isEventBatch(subject))
            #expect(subjects.parseEvent(subject) == nil)
            // `<prefix>.ev.<partition>.<tenant>.>` and `<prefix>.ev.<partition>.>` match it: one
            // token after the tenant.
            let tenantWildcard = subjects.events(tenant: tenant)
            #expect(subject.hasPrefix(String(tenantWildcard.dropLast())))
            #expect(subject.dropFirst(tenantWildcard.count - 1).split(separator: ".").count == 1)
            #expect(subject.hasPrefix(String(subjects.events(partition: EventPartition(tenant: tenant)).dropLast())))
        }
        let acme = EventPartition(tenant: "acme")
        let other = EventPartition((acme.index + 1) % EventPartition.count)!
        #expect(subjects.isEventBatch("test.p1.ev.\(acme).acme.batch"))
        // The partition must be the tenant's, and written the one way.
        #expect(!subjects.isEventBatch("test.p1.ev.\(other).acme.batch"))
        #expect(!subjects.isEventBatch("test.p1.ev.0\(acme).acme.batch"))
        #expect(!subjects.isEventBatch("test.p1.ev.acme.batch"))
        // An event subject whose agent or swarm is named "batch" is not a batch subject.
        #expect(!subjects.isEventBatch(subjects.event(tenant: "acme", swarm: "s", agent: "batch", kind: .log)))
        #expect(!subjects.isEventBatch(subjects.event(tenant: "acme", swarm: "batch", agent: "a", kind: .log)))
        #expect(!subjects.isEventBatch("test.p1.ev..batch"))
        #expect(!subjects.isEventBatch("other.ev.\(acme).acme.batch"))
        #expect(!subjects.isEventBatch("test.p1.ev.batch"))
    }

    @Test("both shapes read the same way: a batch's events in order, or a subject's one event")
    func bothShapes() throws {
        let subjects = try Subjects(prefix: "sd")
        var batch = BusEventBatch()
        batch.events = [Self.envelope(1), Self.envelope(2), Self.envelope(3)]
        let fromBatch = try BusEventBatch.envelopes(
            in: try batch.serializedBytes(),
            subject: subjects.eventBatch(tenant: "acme"),
            subjects: subjects
        )
        #expect(fromBatch == batch.events)
        let single = try BusEventBatch.envelopes(
            in: try Self.envelope(4).serializedBytes(),
            subject: subjects.event(tenant: "acme", swarm: "s", agent: "a", kind: .log),
            subjects: subjects
        )
        #expect(single == [Self.envelope(4)])
    }

    @Test("a batch read as one envelope (a consumer from before batches) has no tenant, seq or frame")
    func olderConsumersFindNothing() throws {
        var batch = BusEventBatch()
        batch.events = [Self.envelope(1), Self.envelope(2)]
        let misread = try BusEventEnvelope(serializedBytes: try batch.serializedBytes() as [UInt8])
        #expect(misread.tenantID.isEmpty)
        #expect(misread.seq == 0)
        #expect(misread.frame.isEmpty)
    }

    @Test("a payload that is not protobuf is refused", arguments: [[0xFF, 0xFF, 0xFF], [0x0A, 0x10, 0x41]] as [[UInt8]])
    func garbage(payload: [UInt8]) throws {
        let subjects = try Subjects(prefix: "sd")
        #expect(throws: (any Error).self) {
            try BusEventBatch.envelopes(in: payload, subject: subjects.eventBatch(tenant: "acme"), subjects: subjects)
        }
        #expect(throws: (any Error).self) {
            try BusEventBatch.envelopes(in: payload, subject: subjects.event(tenant: "acme", swarm: "s", agent: "a", kind: .log), subjects: subjects)
        }
    }
}

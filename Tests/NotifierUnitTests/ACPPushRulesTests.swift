import APNs
import Contracts
import Foundation
import Testing

@testable import Notifier

/// The pure parts of the ACP threads' silent pushes: presence, preferences, the payload, the
/// events that count as an advance.
@Suite("Notifier ACP push rules")
struct ACPPushRulesTests {
    static func presence(_ device: String, _ connection: String, _ threads: [String], ttl: Int64 = 1000, tenant: String = "t") -> ACPPresence {
        ACPPresence(tenant: tenant, device: device, connection: connection, threads: threads, ttlMilliseconds: ttl)
    }

    @Test(
        "presence: live while announced and not expired, per tenant and device; a newer announcement of a connection replaces it; the end removes it"
    )
    func presenceTable() {
        var table = ACPPresenceTable(maxConnections: 10)
        table.apply(Self.presence("phone", "c1", ["t1", "t2"]), now: 0)
        #expect(table.isLive(tenant: "t", device: "phone", thread: "t1", now: 999))
        #expect(!table.isLive(tenant: "t", device: "phone", thread: "t1", now: 1000))  // expired
        #expect(!table.isLive(tenant: "t", device: "phone", thread: "t3", now: 10))
        #expect(!table.isLive(tenant: "other", device: "phone", thread: "t1", now: 10))
        #expect(!table.isLive(tenant: "t", device: "tablet", thread: "t1", now: 10))
        // A second connection of the device; the first one's threads change.
        table.apply(Self.presence("phone", "c2", ["t3"]), now: 10)
        table.apply(Self.presence("phone", "c1", ["t2"]), now: 10)
        #expect(!table.isLive(tenant: "t", device: "phone", thread: "t1", now: 20))
        #expect(table.isLive(tenant: "t", device: "phone", thread: "t2", now: 20))
        #expect(table.isLive(tenant: "t", device: "phone", thread: "t3", now: 20))
        // The end of c2 (no threads, no time to live).
        table.apply(Self.presence("phone", "c2", [], ttl: 0), now: 30)
        #expect(!table.isLive(tenant: "t", device: "phone", thread: "t3", now: 40))
        #expect(table.count == 1)
        table.dropExpired(now: 5000)
        #expect(table.count == 0)
    }

    @Test("presence is bounded: past maxConnections expired ones go first, then a new connection is not remembered")
    func presenceBound() {
        var table = ACPPresenceTable(maxConnections: 2)
        table.apply(Self.presence("a", "c1", ["t"]), now: 0)
        table.apply(Self.presence("b", "c2", ["t"], ttl: 10), now: 0)
        table.apply(Self.presence("c", "c3", ["t"]), now: 5)
        #expect(table.count == 2 && !table.isLive(tenant: "t", device: "c", thread: "t", now: 6))
        table.apply(Self.presence("c", "c3", ["t"]), now: 20)  // c2 expired at 10: it makes room
        #expect(table.count == 2 && table.isLive(tenant: "t", device: "c", thread: "t", now: 21))
        #expect(!table.isLive(tenant: "t", device: "b", thread: "t", now: 21))
        // An announcement of one device's connection by another device moves it.
        table.apply(Self.presence("d", "c3", ["t"]), now: 22)
        #expect(!table.isLive(tenant: "t", device: "c", thread: "t", now: 23) && table.isLive(tenant: "t", device: "d", thread: "t", now: 23))
    }

    @Test("preferences: acpThreads defaults on, also for a document stored before it existed; off and the swarm filter say no")
    func preferences() throws {
        let advance = ACPAdvance(tenant: "t", thread: "t1", swarm: "checkout", threadSeq: 3, committedAt: 1000)
        #expect(NotificationPreferences.defaults.wants(advance))
        let old = try JSONDecoder().decode(
            NotificationPreferences.self,
            from: Data(#"{"types":["approval_gate"],"swarms":["checkout"],"resolutions":false}"#.utf8)
        )
        #expect(old.acpThreads && old.types == [.approvalGate] && old.swarms == ["checkout"] && !old.resolutions)
        #expect(old.wants(advance))
        var off = old
        off.acpThreads = false
        #expect(!off.wants(advance))
        let stored = try JSONDecoder().decode(NotificationPreferences.self, from: try JSONEncoder().encode(off))
        #expect(stored == off)
        var elsewhere = old
        elsewhere.swarms = ["billing"]
        #expect(!elsewhere.wants(advance))
    }

    @Test(
        "the payload: content-available, the thread, no alert and no message content, under 4096 bytes; a background push with priority 5 passes the client's checks"
    )
    func payload() throws {
        let advance = ACPAdvance(tenant: "t", thread: String(repeating: "x", count: 256), swarm: "s", threadSeq: 9, committedAt: 1)
        let data = PushPayload.renderACP(advance)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect((object["aps"] as? [String: Any])?.keys.sorted() == ["content-available"])
        #expect(object["thread_id"] as? String == advance.thread && object["hint"] as? String == "inbox_delta")
        #expect(data.count < 4096)
        // Several threads' advances in one span: no thread named, the app fetches its inbox.
        let inbox = try #require(try JSONSerialization.jsonObject(with: PushPayload.renderACP(advance, thread: false)) as? [String: Any])
        #expect(inbox["thread_id"] == nil && inbox["swarmId"] == nil && inbox["type"] as? String == "acp_thread")
        let notification = APNsNotification(
            deviceToken: String(repeating: "ab", count: 32),
            environment: .sandbox,
            topic: "dev.swarmdeck.app",
            pushType: .background,
            priority: .powerAware,
            expiration: 0,
            collapseID: "acp",
            apnsID: UUID(),
            payload: data
        )
        try notification.validate()
    }

    @Test("an advance is ingest's notice with a thread, on the subject of its own tenant")
    func advance() throws {
        let subjects = try Subjects(prefix: "sd")
        var notice = ACPAdvanceNotice(tenant: "t", swarmId: "s", agentId: "a", threadId: "th", threadSeq: 4, committedAt: 5000)
        let subject = subjects.acpAdvanced(tenant: "t")
        let advance = try #require(ACPAdvance(notice, subject: subject, subjects: subjects))
        #expect(advance == ACPAdvance(tenant: "t", thread: "th", swarm: "s", threadSeq: 4, committedAt: 5000))
        #expect(ACPAdvance(notice, subject: subjects.acpAdvanced(tenant: "u"), subjects: subjects) == nil)
        #expect(ACPAdvance(notice, subject: subjects.acpPresence(tenant: "t"), subjects: subjects) == nil)
        notice.threadId = ""
        #expect(ACPAdvance(notice, subject: subject, subjects: subjects) == nil)
    }

    @Test("an announcement holds at most ten minutes whatever it says, and a huge one does not overflow")
    func presenceTTL() {
        var table = ACPPresenceTable(maxConnections: 10)
        table.apply(Self.presence("phone", "c1", ["t1"], ttl: .max), now: 1000)
        #expect(table.isLive(tenant: "t", device: "phone", thread: "t1", now: 1000 + 599_999))
        #expect(!table.isLive(tenant: "t", device: "phone", thread: "t1", now: 1000 + 600_000))
    }
}

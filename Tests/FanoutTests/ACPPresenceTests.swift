import Contracts
import Foundation
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import StreamTestSupport
import Synchronization
import TestSupport
import Testing

@testable import StreamFanout

/// The notifier skips a thread's silent push for a device that follows the thread live: what
/// stream-fanout announces of its `/v1/acp` connections.
@Suite("Stream-fanout announces the ACP threads each connection follows live (live NATS + Postgres)")
struct ACPPresenceTests {
    @Test("subscribe live, unsubscribe, another thread, close: each change announced on the tenant's subject, the end with no time to live")
    func announcements() async throws {
        let harness = try await FanoutHarness(fanout: ["FANOUT_ACP_PRESENCE_SECONDS": "300"])
        let subjects = try Subjects(prefix: harness.prefix)
        let nats = try await NATSConnection.connect(NATSConfiguration(servers: [try TestEnvironment.natsURL], name: "presence-listener"))
        let subscription = try await nats.subscribe(to: subjects.allACPPresence)
        let heard = Mutex<[(String, ACPPresence)]>([])
        let listener = Task {
            for await message in subscription {
                if let presence = try? JSONDecoder().decode(ACPPresence.self, from: Data(message.payload)) {
                    heard.withLock { $0.append((message.subject, presence)) }
                }
            }
        }
        try await harness.ingest().test(.router) { _ in
            try await harness.fanout().test(.live) { fanout in
                var phone = StreamClient(port: try #require(fanout.port), token: try await harness.token(subject: "phone-7"))
                phone.path = "/v1/acp"
                _ = try await phone.run(
                    sending: [
                        FanoutHarness.acpRequest(1, "acp.cache.subscribe", ["thread_id": "t1", "live": true]),
                        FanoutHarness.acpRequest(2, "acp.cache.subscribe", ["thread_id": "t0", "live": false]),
                        FanoutHarness.acpRequest(3, "acp.cache.unsubscribe", ["thread_id": "t1"]),
                        FanoutHarness.acpRequest(4, "acp.cache.subscribe", ["thread_id": "t2", "live": true]),
                    ]
                ) { $0["id"] as? Int == 4 }
                #expect(await eventually { heard.withLock { $0.count } >= 4 })
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        subscription.unsubscribe()
        listener.cancel()
        await nats.close()
        let announcements = heard.withLock { $0 }
        #expect(announcements.allSatisfy { $0.0 == subjects.acpPresence(tenant: harness.tenant) })
        #expect(announcements.allSatisfy { $0.1.tenant == harness.tenant && $0.1.device == "phone-7" })
        #expect(Set(announcements.map(\.1.connection)).count == 1)
        // Each change once, in order: t1; nothing (t0 is not live); t2; the end.
        #expect(announcements.map(\.1.threads) == [["t1"], [], ["t2"], []])
        #expect(announcements.map { $0.1.ttlMilliseconds > 0 } == [true, false, true, false])
        #expect(announcements.first?.1.ttlMilliseconds == 900_000)
    }
}

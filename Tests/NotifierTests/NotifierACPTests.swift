import APNsLocal
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import NIOCore
import ServiceKit
import TestSupport
import Testing

/// Seed 003: a thread's head advancing reaches the devices that do not follow it live as a
/// silent push, at most one per thread and span, from ingest's ACP stream.
@Suite("Notifier: ACP threads' silent pushes (live ingest, the ACP stream, presence)", .serialized)
struct NotifierACPTests {
    /// Spans of two seconds: short enough for a test, long enough to see a span coalesce.
    static let overrides = ["NOTIFIER_ACP_PUSH_INTERVAL_SECONDS": "2"]

    static func postACP(_ ingest: some TestClientProtocol, key: String, thread: String, n: Int) async throws {
        let body = #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":\#(n)}}"#
        try await ingest.execute(
            uri: "/v1/ingest/acp/\(thread)?swarmId=checkout&agentId=a1&direction=agent_to_client&msgId=m-\(thread)-\(n)",
            method: .post,
            headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(string: body)
        ) { response in
            #expect(response.status == .ok)
        }
    }

    /// Announces, as stream-fanout does, that `device`'s connection follows `threads` live.
    static func announce(_ nats: NATSConnection, _ subjects: Subjects, tenant: String, device: String, threads: [String], ttl: Int64) throws {
        let presence = ACPPresence(tenant: tenant, device: device, connection: "c-\(device)", threads: threads, ttlMilliseconds: ttl)
        try nats.publish(Array(try JSONEncoder().encode(presence)), to: subjects.acpPresence(tenant: tenant))
    }

    @Test(
        "an advance reaches each device that wants it and does not follow the thread live, once per span, as a background push with the thread; none for a device that switched it off or of another tenant"
    )
    func silentPushes() async throws {
        let harness = try await NotifierHarness.start(Self.overrides)
        let live = harness.live
        let (nats, _, subjects) = try await harness.publisher()
        try await live.application(IngestService.self).test(.router) { ingest in
            try await harness.run { notifier in
                try await harness.register(notifier, device: "watch", token: 1)
                try await harness.register(notifier, device: "away", token: 2)
                let off = try await harness.register(notifier, device: "off", token: 3)
                try await harness.register(notifier, device: "stranger", token: 4, tenant: "other-\(live.tenant)")
                let (status, body) = try await LiveCall.call(
                    notifier,
                    .put,
                    "/v1/devices/me/notification-preferences",
                    token: off,
                    json: ["types": ["approval_gate"], "swarms": [], "resolutions": true, "acpThreads": false]
                )
                #expect(status == .ok, "\(body)")
                #expect(body["acpThreads"] as? Bool == false)
                // watch follows t1 live; away follows another thread. Said again and again, as
                // stream-fanout does, so that the notifier's subscription, which starts with it,
                // hears them.
                for _ in 0..<10 {
                    try Self.announce(nats, subjects, tenant: live.tenant, device: "watch", threads: ["t1"], ttl: 60_000)
                    try Self.announce(nats, subjects, tenant: live.tenant, device: "away", threads: ["t9"], ttl: 60_000)
                    // A forged announcement for this tenant on another tenant's subject is ignored.
                    let forged = ACPPresence(tenant: live.tenant, device: "away", connection: "x", threads: ["t1"], ttlMilliseconds: 60_000)
                    try nats.publish(Array(try JSONEncoder().encode(forged)), to: subjects.acpPresence(tenant: "other-\(live.tenant)"))
                    try await Task.sleep(for: .milliseconds(200))
                }

                let key = try await live.createKey(ingest)
                for n in 1...5 { try await Self.postACP(ingest, key: key, thread: "t1", n: n) }
                let pushes = try await harness.waitForPushes(1, seconds: 20) { $0.pushType == "background" }
                let push = try #require(pushes.first)
                #expect(push.deviceToken == NotifierHarness.apnsToken(2))
                #expect(push.priority == "5" && push.collapseID == "acp-t1")
                let payload = NotifierHarness.payload(push)
                #expect((payload["aps"] as? [String: Any])?["content-available"] as? Int == 1)
                #expect((payload["aps"] as? [String: Any])?["alert"] == nil)
                #expect(payload["thread_id"] as? String == "t1" && payload["type"] as? String == "acp_thread")
                // Five messages within the spans they fell in: at most one push per span (two
                // if the posts straddled a span's end), to away only.
                try await Task.sleep(for: .seconds(3))
                let all = harness.apns.received().filter { $0.pushType == "background" }
                #expect((1...2).contains(all.count), "\(all.map(\.deviceToken))")
                #expect(all.allSatisfy { $0.deviceToken == NotifierHarness.apnsToken(2) })

                // Once watch stops following t1, the next advance reaches it too.
                try Self.announce(nats, subjects, tenant: live.tenant, device: "watch", threads: [], ttl: 0)
                try await Task.sleep(for: .milliseconds(300))
                try await Self.postACP(ingest, key: key, thread: "t1", n: 6)
                let watch = try await harness.waitForPushes(1, seconds: 20) {
                    $0.pushType == "background" && $0.deviceToken == NotifierHarness.apnsToken(1)
                }
                #expect(watch.count == 1)
                // Never the device that switched them off, nor the other tenant's.
                #expect(!harness.apns.received().contains { [NotifierHarness.apnsToken(3), NotifierHarness.apnsToken(4)].contains($0.deviceToken) })
            }
        }
        await nats.close()
        try await harness.stop()
    }

    @Test("advances committed while the notifier is down are pushed once it is back (the ACP stream is durable)")
    func durable() async throws {
        let harness = try await NotifierHarness.start(Self.overrides)
        let live = harness.live
        try await live.application(IngestService.self).test(.router) { ingest in
            // Registered, then the notifier stops.
            try await harness.run { notifier in try await harness.register(notifier, device: "away", token: 7) }
            let key = try await live.createKey(ingest)
            try await Self.postACP(ingest, key: key, thread: "t2", n: 1)
            try await harness.run { _ in
                let pushes = try await harness.waitForPushes(1, seconds: 20) { $0.pushType == "background" }
                #expect(pushes.first?.deviceToken == NotifierHarness.apnsToken(7))
                #expect(pushes.first.flatMap { NotifierHarness.payload($0)["thread_id"] as? String } == "t2")
            }
        }
        try await harness.stop()
    }
}

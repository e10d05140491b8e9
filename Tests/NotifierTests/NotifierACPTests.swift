import APNsLocal
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import NIOCore
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

/// Seed 003: a thread's head advancing reaches the devices that do not follow it live as a
/// silent push, at most one per thread and span, from ingest's ACP stream.
@Suite("Notifier: ACP threads' silent pushes (live ingest, the ACP stream, presence)", .serialized, .tags(.alone))
struct NotifierACPTests {
    /// Spans of three seconds: short enough for a test, long enough to see a span coalesce.
    static let spanSeconds = 3
    static let overrides = ["NOTIFIER_ACP_PUSH_INTERVAL_SECONDS": String(spanSeconds)]

    static func postACP(_ live: LiveHarness, _ ingest: some TestClientProtocol, key: String, thread: String, n: Int) async throws {
        let body = #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":\#(n)}}"#
        #expect(try await live.postACP(ingest, key: key, thread: thread, body: body, msgID: "m-\(thread)-\(n)", swarm: "checkout") == .ok)
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
                // The spans the five posts can have committed in (the server's clock is this
                // machine's): on a loaded machine they may straddle more than one.
                let span = Double(Self.spanSeconds) * 1000
                let first = Date().milliseconds
                for n in 1...5 { try await Self.postACP(live, ingest, key: key, thread: "t1", n: n) }
                let spans = Int((Double(Date().milliseconds) / span).rounded(.down) - (Double(first) / span).rounded(.down)) + 1
                let pushes = try await harness.waitForPushes(1, seconds: 20) { $0.pushType == "background" }
                let push = try #require(pushes.first)
                #expect(push.deviceToken == NotifierHarness.apnsToken(2))
                #expect(push.priority == "5" && push.collapseID == "acp")
                let payload = NotifierHarness.payload(push)
                #expect((payload["aps"] as? [String: Any])?["content-available"] as? Int == 1)
                #expect((payload["aps"] as? [String: Any])?["alert"] == nil)
                #expect(payload["thread_id"] as? String == "t1" && payload["type"] as? String == "acp_thread")
                // Five messages: at most one push per span they fell in, to away only.
                try await Task.sleep(for: .seconds(Self.spanSeconds + 1))
                let all = harness.apns.received().filter { $0.pushType == "background" }
                #expect((1...spans).contains(all.count), "\(all.count) pushes for posts over \(spans) spans")
                #expect(all.allSatisfy { $0.deviceToken == NotifierHarness.apnsToken(2) })

                // Once watch stops following t1, the next advance reaches it too.
                try Self.announce(nats, subjects, tenant: live.tenant, device: "watch", threads: [], ttl: 0)
                try await Task.sleep(for: .milliseconds(300))
                try await Self.postACP(live, ingest, key: key, thread: "t1", n: 6)
                let watch = try await harness.waitForPushes(1, seconds: 20) {
                    $0.pushType == "background" && $0.deviceToken == NotifierHarness.apnsToken(1)
                }
                #expect(watch.count == 1)

                // Two threads advancing in one span: one push per device, naming no thread.
                try await Task.sleep(for: .seconds(Self.spanSeconds + 1))
                let before = harness.apns.received().filter { $0.pushType == "background" }.count
                let start = Date().milliseconds
                try await Self.postACP(live, ingest, key: key, thread: "t2", n: 1)
                try await Self.postACP(live, ingest, key: key, thread: "t3", n: 1)
                let oneSpan = (Double(start) / span).rounded(.down) == (Double(Date().milliseconds) / span).rounded(.down)
                let later = try await harness.waitForPushes(before + 2, seconds: 20) { $0.pushType == "background" }
                if oneSpan {
                    try await Task.sleep(for: .seconds(1))
                    let news = harness.apns.received().dropFirst(before).filter { $0.pushType == "background" }
                    #expect(news.count == 2, "\(news.map(\.deviceToken))")  // watch and away
                    #expect(news.allSatisfy { NotifierHarness.payload($0)["thread_id"] == nil })
                } else {
                    #expect(later.count >= before + 2)
                }
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
            let key = try await live.createKey(ingest)
            // Registered, and a first advance pushed (so the durable consumer exists and has
            // taken it); then the notifier stops.
            try await harness.run { notifier in
                try await harness.register(notifier, device: "away", token: 7)
                try await Self.postACP(live, ingest, key: key, thread: "t1", n: 1)
                #expect(try await harness.waitForPushes(1, seconds: 20) { $0.pushType == "background" }.count == 1)
            }
            // In a later span (a device gets one push per span).
            try await Task.sleep(for: .seconds(Self.spanSeconds))
            try await Self.postACP(live, ingest, key: key, thread: "t2", n: 1)
            // Back: the consumer goes on where it was, and takes what came while it was down.
            try await harness.run { _ in
                let pushes = try await harness.waitForPushes(2, seconds: 20) { $0.pushType == "background" }
                #expect(pushes.count == 2 && pushes.allSatisfy { $0.deviceToken == NotifierHarness.apnsToken(7) })
                #expect(pushes.last.flatMap { NotifierHarness.payload($0)["thread_id"] as? String } == "t2")
            }
        }
        try await harness.stop()
    }
}

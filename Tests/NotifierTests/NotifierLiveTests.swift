import APNsLocal
import Contracts
import Foundation
import HummingbirdTesting
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

/// The notifier live: notices on the real streams, jobs in the real schema, pushes to the local
/// APNs server over HTTP/2 and TLS.
@Suite("Notifier: notices to pushes (live NATS, Postgres and local APNs)")
struct NotifierLiveTests {
    @Test(
        "an incident reaches its tenant's devices only, with its collapse id and deep link; its resolution replaces it; a notice taken twice pushes once"
    )
    func incidentToPush() async throws {
        let harness = try await NotifierHarness.start()
        let (nats, jetStream, subjects) = try await harness.publisher()
        try await harness.run { notifier in
            try await harness.register(notifier, device: "phone-a", token: 1)
            let otherTenant = "other-" + harness.tenant
            try await harness.register(notifier, device: "phone-z", token: 26, tenant: otherTenant)
            try await NotifierHarness.publishIncident(jetStream, subjects, tenant: harness.tenant, id: "inc_1")
            let firing = try await harness.waitForPushes(1)
            #expect(firing.count == 1)
            let push = try #require(firing.first)
            #expect(push.deviceToken == NotifierHarness.apnsToken(1) && push.status == 200)
            #expect(push.collapseID == "incident-inc_1" && push.topic == NotifierHarness.topic && push.pushType == "alert" && push.priority == "10")
            let payload = NotifierHarness.payload(push)
            #expect(payload["type"] as? String == "incident" && payload["incidentId"] as? String == "inc_1")
            #expect(payload["webUrl"] as? String == "http://localhost:8080/incidents/inc_1" && payload["swarmId"] as? String == "checkout")
            // The same change again (a redelivery under another message id): no second push.
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let again = IncidentNotice(
                tenant: harness.tenant,
                incidentId: "inc_1",
                rule: "context_near_capacity",
                status: "firing",
                severity: "warning",
                summary: "again",
                swarmId: "checkout",
                agentId: "a1",
                firedAt: now,
                resolvedAt: nil,
                webUrl: "x"
            )
            _ = try await jetStream.publish(
                Array(try JSONEncoder().encode(again)),
                to: subjects.incidentChanged(tenant: harness.tenant),
                messageID: "again"
            )
            try await NotifierHarness.publishIncident(jetStream, subjects, tenant: harness.tenant, id: "inc_1", status: "resolved")
            let both = try await harness.waitForPushes(2)
            #expect(both.count == 2)
            let resolved = try #require(both.last)
            #expect(resolved.collapseID == "incident-inc_1" && NotifierHarness.payload(resolved)["status"] as? String == "resolved")
            try await Task.sleep(for: .seconds(1))
            #expect(harness.apns.received().count == 2)
            #expect(!harness.apns.received().contains { $0.deviceToken == NotifierHarness.apnsToken(26) })
        }
        await nats.close()
        try await harness.stop()
    }

    @Test("preferences choose types and swarms; quiet hours make a push passive and silent")
    func preferencesAndQuietHours() async throws {
        let harness = try await NotifierHarness.start()
        let (nats, jetStream, subjects) = try await harness.publisher()
        try await harness.run { notifier in
            try await harness.register(notifier, device: "all", token: 1)
            let gatesOnly = try await harness.register(notifier, device: "gates-only", token: 2)
            let billingOnly = try await harness.register(notifier, device: "billing-only", token: 3)
            let quiet = try await harness.register(notifier, device: "quiet", token: 4)
            var (status, body) = try await LiveCall.call(
                notifier,
                .put,
                "/v1/devices/me/notification-preferences",
                token: gatesOnly,
                json: ["types": ["approval_gate"], "swarms": [], "resolutions": true]
            )
            #expect(status == .ok, "\(body)")
            (status, body) = try await LiveCall.call(
                notifier,
                .put,
                "/v1/devices/me/notification-preferences",
                token: billingOnly,
                json: ["types": ["context"], "swarms": ["billing"], "resolutions": false]
            )
            #expect(status == .ok, "\(body)")
            let hour = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: Date()).hour!
            let start = String(format: "%02d:00", (hour + 23) % 24)
            let end = String(format: "%02d:00", (hour + 2) % 24)
            (status, body) = try await LiveCall.call(
                notifier,
                .put,
                "/v1/devices/me/notification-preferences",
                token: quiet,
                json: ["types": ["context"], "swarms": [], "resolutions": true, "quietHours": ["start": start, "end": end, "timeZone": "UTC"]]
            )
            #expect(status == .ok, "\(body)")
            (status, body) = try await LiveCall.call(notifier, .get, "/v1/devices/me/notification-preferences", token: quiet)
            #expect((body["quietHours"] as? [String: Any])?["start"] as? String == start)
            try await NotifierHarness.publishIncident(jetStream, subjects, tenant: harness.tenant, id: "inc_checkout")
            try await NotifierHarness.publishIncident(jetStream, subjects, tenant: harness.tenant, id: "inc_billing", swarm: "billing")
            let pushes = try await harness.waitForPushes(5)
            try await Task.sleep(for: .seconds(1))
            let received = harness.apns.received()
            let byDevice = Dictionary(grouping: received, by: \.deviceToken)
            #expect(byDevice[NotifierHarness.apnsToken(1)]?.count == 2)
            #expect(byDevice[NotifierHarness.apnsToken(2)] == nil)
            #expect(byDevice[NotifierHarness.apnsToken(3)]?.map(\.collapseID) == ["incident-inc_billing"])
            let quietPushes = byDevice[NotifierHarness.apnsToken(4)] ?? []
            #expect(quietPushes.count == 2 && pushes.count == 5)
            for push in quietPushes {
                let aps = NotifierHarness.payload(push)["aps"] as? [String: Any] ?? [:]
                #expect(aps["interruption-level"] as? String == "passive" && aps["sound"] == nil)
            }
        }
        await nats.close()
        try await harness.stop()
    }

    @Test("ten incidents for one device within a second: the limit's pushes, then one summary when the window ends")
    func rateLimitAndSummary() async throws {
        // A window long enough that the ten notices fall in it on a loaded machine.
        let harness = try await NotifierHarness.start(["NOTIFIER_DEVICE_PUSH_LIMIT": "3", "NOTIFIER_DEVICE_WINDOW_SECONDS": "10"])
        let (nats, jetStream, subjects) = try await harness.publisher()
        try await harness.run { notifier in
            try await harness.register(notifier, device: "phone", token: 1)
            for n in 0..<10 { try await NotifierHarness.publishIncident(jetStream, subjects, tenant: harness.tenant, id: "inc_\(n)") }
            let pushes = try await harness.waitForPushes(4, seconds: 30)
            try await Task.sleep(for: .seconds(1))
            let received = harness.apns.received()
            #expect(received.count == 4, "\(received.map(\.collapseID))")
            #expect(received.prefix(3).allSatisfy { $0.collapseID?.hasPrefix("incident-") == true })
            let summary = try #require(pushes.last)
            #expect(summary.collapseID == "summary")
            let payload = NotifierHarness.payload(summary)
            #expect(payload["type"] as? String == "summary" && payload["count"] as? Int == 7)
            #expect(((payload["aps"] as? [String: Any])?["alert"] as? [String: Any])?["body"] as? String == "7 more alerts in checkout")
        }
        await nats.close()
        try await harness.stop()
    }

    @Test("410 removes the token for good; 429 delays that device only; 503 is retried with backoff; BadDeviceToken marks the environment")
    func apnsAnswers() async throws {
        let harness = try await NotifierHarness.start()
        let (nats, jetStream, subjects) = try await harness.publisher()
        try await harness.run { notifier in
            let gone = try await harness.register(notifier, device: "gone", token: 1)
            try await harness.register(notifier, device: "busy", token: 2)
            try await harness.register(notifier, device: "calm", token: 3)
            try await harness.register(notifier, device: "flaky", token: 4)
            let wrong = try await harness.register(notifier, device: "wrong-env", token: 5, environment: "production")
            harness.apns.program(APNsLocalRule(deviceToken: NotifierHarness.apnsToken(1), status: 410, reason: "Unregistered"))
            harness.apns.program(APNsLocalRule(deviceToken: NotifierHarness.apnsToken(2), status: 429, reason: "TooManyRequests", count: 2))
            harness.apns.program(APNsLocalRule(deviceToken: NotifierHarness.apnsToken(4), status: 503, reason: "ServiceUnavailable", count: 2))
            harness.apns.program(APNsLocalRule(deviceToken: NotifierHarness.apnsToken(5), status: 400, reason: "BadDeviceToken"))
            try await NotifierHarness.publishIncident(jetStream, subjects, tenant: harness.tenant, id: "inc_1")
            // Delivered: calm at once, busy and flaky after their retries.
            let delivered = try await harness.waitForPushes(3, seconds: 20) { $0.status == 200 }
            #expect(Set(delivered.map(\.deviceToken)) == [NotifierHarness.apnsToken(2), NotifierHarness.apnsToken(3), NotifierHarness.apnsToken(4)])
            let received = harness.apns.received()
            let calm = try #require(received.first { $0.deviceToken == NotifierHarness.apnsToken(3) })
            let busyDelivered = try #require(received.first { $0.deviceToken == NotifierHarness.apnsToken(2) && $0.status == 200 })
            #expect(calm.index < busyDelivered.index)
            #expect(received.filter { $0.deviceToken == NotifierHarness.apnsToken(2) }.map(\.status) == [429, 429, 200])
            #expect(received.filter { $0.deviceToken == NotifierHarness.apnsToken(4) }.map(\.status) == [503, 503, 200])
            // The 410: the registration is gone and the token never used again.
            var (status, _) = try await LiveCall.call(notifier, .get, "/v1/devices/me/push", token: gone)
            #expect(status == .notFound)
            var body: [String: Any]
            (status, body) = try await LiveCall.call(notifier, .get, "/v1/devices/me/push", token: wrong)
            #expect(body["status"] as? String == "invalidForEnvironment")
            try await NotifierHarness.publishIncident(jetStream, subjects, tenant: harness.tenant, id: "inc_2")
            _ = try await harness.waitForPushes(6, seconds: 20) { $0.status == 200 }
            try await Task.sleep(for: .seconds(1))
            let after = harness.apns.received()
            #expect(after.filter { $0.deviceToken == NotifierHarness.apnsToken(1) }.count == 1)
            #expect(after.filter { $0.deviceToken == NotifierHarness.apnsToken(5) }.count == 1)
            // One provider token for every push of the run, never one per request.
            #expect(Set(after.compactMap(\.tokenDigest)).count == 1)
            // Registering again with the right environment makes it active.
            (status, body) = try await LiveCall.call(
                notifier,
                .put,
                "/v1/devices/me/push",
                token: wrong,
                json: ["apnsToken": NotifierHarness.apnsToken(5), "environment": "sandbox", "topic": NotifierHarness.topic]
            )
            #expect(status == .ok && body["status"] as? String == "active")
        }
        await nats.close()
        try await harness.stop()
    }

    @Test("a revoked device is forgotten at once: no push reaches it, its registration is gone")
    func revokedDevice() async throws {
        let harness = try await NotifierHarness.start()
        let (nats, jetStream, subjects) = try await harness.publisher()
        try await harness.run { notifier in
            try await harness.register(notifier, device: "kept", token: 1)
            let lost = try await harness.register(notifier, device: "lost", token: 2)
            let notice = RevocationNotice(tenant: harness.tenant, subject: "lost", revokedAt: Int64(Date().timeIntervalSince1970 * 1000))
            try nats.publish(Array(try JSONEncoder().encode(notice)), to: subjects.revocation(tenant: harness.tenant))
            // Its own token is refused from now on.
            let refused = await eventually(timeout: .seconds(10)) {
                (try? await LiveCall.call(notifier, .get, "/v1/devices/me/push", token: lost).0) == .unauthorized
            }
            #expect(refused)
            // And the sweep removes its registration (the kept device's stays).
            let gone = await eventually(timeout: .seconds(10)) { (try? await Self.registered(harness)) == ["kept"] }
            let left = try await Self.registered(harness)
            #expect(gone, "still registered: \(left)")
            try await NotifierHarness.publishIncident(jetStream, subjects, tenant: harness.tenant, id: "after-revocation")
            _ = try await harness.waitForPushes(1)
            try await Task.sleep(for: .seconds(1))
            #expect(harness.apns.received().map(\.deviceToken) == [NotifierHarness.apnsToken(1)])
        }
        await nats.close()
        try await harness.stop()
    }

    /// The devices with a registration in the harness's schema.
    static func registered(_ harness: NotifierHarness) async throws -> [String] {
        let postgres = PostgresClient(configuration: try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 1))
        let running = Task { await postgres.run() }
        defer { running.cancel() }
        let schema = try harness.live.environment()["NOTIFIER_SCHEMA"]!
        let rows = try await postgres.query("SELECT device_id FROM \(unescaped: schema).devices WHERE tenant_id = \(harness.tenant) ORDER BY 1")
        var devices: [String] = []
        for try await device in rows.decode(String.self) { devices.append(device) }
        return devices
    }

    @Test("bad input answers 4xx in the envelope; another device's or tenant's registration is never seen")
    func badInput() async throws {
        let harness = try await NotifierHarness.start(["NOTIFIER_MAX_DEVICES_PER_TENANT": "2"])
        try await harness.run { notifier in
            let token = try await harness.token(device: "phone")
            let bad: [[String: Any]] = [
                ["apnsToken": "xyz", "environment": "sandbox", "topic": NotifierHarness.topic],
                ["apnsToken": NotifierHarness.apnsToken(1), "environment": "staging", "topic": NotifierHarness.topic],
                ["apnsToken": NotifierHarness.apnsToken(1), "environment": "sandbox", "topic": "com.other.app"],
                ["apnsToken": NotifierHarness.apnsToken(1), "environment": "sandbox"],
            ]
            for body in bad {
                let (status, answer) = try await LiveCall.call(notifier, .put, "/v1/devices/me/push", token: token, json: body)
                #expect(status == .badRequest && (answer["error"] as? [String: Any])?["code"] as? String == "InvalidRequest", "\(body): \(status)")
            }
            for preferences in [
                ["types": ["loud"], "swarms": [], "resolutions": true],
                ["types": [], "swarms": [], "resolutions": true, "quietHours": ["start": "25:00", "end": "07:00", "timeZone": "UTC"]],
                ["types": [], "swarms": [], "resolutions": true, "quietHours": ["start": "22:00", "end": "07:00", "timeZone": "Mars/Olympus"]],
                ["types": [], "swarms": ["bad\u{7}"], "resolutions": true],
            ] as [[String: Any]] {
                let (status, _) = try await LiveCall.call(notifier, .put, "/v1/devices/me/notification-preferences", token: token, json: preferences)
                #expect(status == .badRequest, "\(preferences)")
            }
            var (status, _) = try await LiveCall.call(notifier, .get, "/v1/devices/me/push")
            #expect(status == .unauthorized)
            let terminalOnly = try await harness.live.token(subject: "phone", scopes: [.terminalAttach])
            (status, _) = try await LiveCall.call(notifier, .get, "/v1/devices/me/push", token: terminalOnly)
            #expect(status == .forbidden)
            // Tenant and device isolation: the same device id in another tenant is another device.
            try await harness.register(notifier, device: "phone", token: 7)
            let otherTenant = try await harness.token(tenant: "other-" + harness.tenant, device: "phone")
            (status, _) = try await LiveCall.call(notifier, .get, "/v1/devices/me/push", token: otherTenant)
            #expect(status == .notFound)
            // The tenant's device cap.
            try await harness.register(notifier, device: "second", token: 8)
            let third = try await harness.token(device: "third")
            var body: [String: Any]
            (status, body) = try await LiveCall.call(
                notifier,
                .put,
                "/v1/devices/me/push",
                token: third,
                json: ["apnsToken": NotifierHarness.apnsToken(9), "environment": "sandbox", "topic": NotifierHarness.topic]
            )
            #expect(status == .tooManyRequests, "\(body)")
            (status, _) = try await LiveCall.call(notifier, .delete, "/v1/devices/me/push", token: token)
            #expect(status == .noContent)
            (status, _) = try await LiveCall.call(notifier, .get, "/v1/devices/me/push", token: token)
            #expect(status == .notFound)
        }
        try await harness.stop()
    }
}

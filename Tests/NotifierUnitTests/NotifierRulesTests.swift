import APNs
import Contracts
import Foundation
import Testing

@testable import Notifier

/// The notifier's pure rules: preferences, quiet hours, the device window, payloads, decisions.
@Suite("Notifier rules")
struct NotifierRulesTests {
    static func incident(
        rule: String = "context_near_capacity",
        status: String = "firing",
        swarm: String? = "checkout",
        summary: String = "92%"
    )
        -> PushNotice
    {
        PushNotice(
            incident: IncidentNotice(
                tenant: "t",
                incidentId: "inc_1",
                rule: rule,
                status: status,
                severity: rule == "critical_error" ? "critical" : "warning",
                summary: summary,
                swarmId: swarm,
                agentId: "a1",
                sessionId: rule == "context_near_capacity" ? "sess-1" : nil,
                skillId: rule == "skill_failure_spike" ? "sk_0123456789abcdef" : nil,
                firedAt: 1000,
                resolvedAt: status == "resolved" ? 2000 : nil,
                webUrl: "https://deck.example/incidents/inc_1"
            )
        )
    }

    @Test("incident rules map to seed 000's push types")
    func categories() {
        #expect(PushCategory(rule: "critical_error") == .criticalError)
        #expect(PushCategory(rule: "context_near_capacity") == .context)
        #expect(PushCategory(rule: "redundancy_spike") == .context)
        #expect(PushCategory(rule: "skill_failure_spike") == .skillFailure)
        #expect(PushCategory(rule: "agent_stuck") == .swarmDegradation)
        #expect(PushCategory(rule: "swarm_error_rate") == .swarmDegradation)
    }

    @Test("a device gets what its preferences ask for: types, swarms, resolutions")
    func preferences() {
        let now = Date()
        var preferences = NotificationPreferences.defaults
        #expect(preferences.delivery(of: Self.incident(), at: now) == .normal)
        preferences.types = [.approvalGate]
        #expect(preferences.delivery(of: Self.incident(), at: now) == nil)
        preferences.types = [.context]
        preferences.swarms = ["billing"]
        #expect(preferences.delivery(of: Self.incident(), at: now) == nil)
        #expect(preferences.delivery(of: Self.incident(swarm: "billing"), at: now) == .normal)
        preferences.resolutions = false
        #expect(preferences.delivery(of: Self.incident(status: "resolved", swarm: "billing"), at: now) == nil)
    }

    @Test("quiet hours silence pushes, across midnight and in the device's time zone; critical errors keep their sound unless included")
    func quietHours() throws {
        let utc = QuietHours(start: 22 * 60, end: 7 * 60, timeZone: "UTC", includeCritical: false)
        let late = try #require(ISO8601DateFormatter().date(from: "2026-11-24T23:30:00Z"))
        let early = try #require(ISO8601DateFormatter().date(from: "2026-11-24T06:59:00Z"))
        let day = try #require(ISO8601DateFormatter().date(from: "2026-11-24T07:00:00Z"))
        #expect(utc.contains(late) && utc.contains(early) && !utc.contains(day))
        // 23:30 UTC is 00:30 in Paris (winter), 18:30 in New York.
        #expect(QuietHours(start: 0, end: 60, timeZone: "Europe/Paris", includeCritical: false).contains(late))
        #expect(!QuietHours(start: 0, end: 60, timeZone: "America/New_York", includeCritical: false).contains(late))
        #expect(!QuietHours(start: 600, end: 600, timeZone: "UTC", includeCritical: false).contains(late))
        var preferences = NotificationPreferences.defaults
        preferences.quietHours = utc
        #expect(preferences.delivery(of: Self.incident(), at: late) == .silent)
        #expect(preferences.delivery(of: Self.incident(rule: "critical_error"), at: late) == .normal)
        preferences.quietHours?.includeCritical = true
        #expect(preferences.delivery(of: Self.incident(rule: "critical_error"), at: late) == .silent)
        #expect(preferences.delivery(of: Self.incident(), at: day) == .normal)
        #expect(QuietHours.minutes("07:05") == 425 && QuietHours.minutes("24:00") == nil && QuietHours.minutes("7:5") == nil)
    }

    @Test("the device window: the limit's pushes, then folds until the minute ends")
    func window() {
        var window = DeviceWindow(start: nil, count: 0)
        var sent = 0
        var foldAt: Set<Int64> = []
        for offset in 0..<10 {
            switch window.decide(now: 1_000 + Int64(offset) * 10, limit: 3, length: 60_000) {
            case .send(let next):
                window = next
                sent += 1
            case .fold(let at):
                foldAt.insert(at)
            }
        }
        #expect(sent == 3 && foldAt == [61_000])
        #expect(window.decide(now: 61_000, limit: 3, length: 60_000) == .send(DeviceWindow(start: 61_000, count: 1)))
        // A clock that went back starts a new window rather than folding forever.
        #expect(window.decide(now: 500, limit: 3, length: 60_000) == .send(DeviceWindow(start: 500, count: 1)))
    }

    @Test("payloads: what the app needs to open the screen, a category for gates, always under 4096 bytes")
    func payloads() throws {
        let data = PushPayload.render(Self.incident(), delivery: .normal)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["type"] as? String == "incident" && object["incidentId"] as? String == "inc_1")
        #expect(object["webUrl"] as? String == "https://deck.example/incidents/inc_1")
        // The screen it opens: the session a context incident is about, the skill of a skill one.
        #expect(object["sessionId"] as? String == "sess-1" && object["skillId"] == nil)
        let skill = try #require(
            try JSONSerialization.jsonObject(with: PushPayload.render(Self.incident(rule: "skill_failure_spike"), delivery: .normal))
                as? [String: Any]
        )
        #expect(skill["skillId"] as? String == "sk_0123456789abcdef" && skill["sessionId"] == nil)
        let aps = try #require(object["aps"] as? [String: Any])
        #expect(aps["category"] as? String == "INCIDENT" && aps["sound"] as? String == "default")
        let silent = try #require(try JSONSerialization.jsonObject(with: PushPayload.render(Self.incident(), delivery: .silent)) as? [String: Any])
        let silentAPS = try #require(silent["aps"] as? [String: Any])
        #expect(silentAPS["sound"] == nil && silentAPS["interruption-level"] as? String == "passive")
        let gate = PushNotice(
            gate: GateNotice(
                tenant: "t",
                gateId: "gate_1",
                swarmId: "s",
                agentId: "a",
                summary: "rm -rf build",
                risk: "high",
                requestedAt: 1,
                expiresAt: 2,
                webUrl: "https://deck.example/gates/gate_1"
            )
        )
        let gateObject = try #require(try JSONSerialization.jsonObject(with: PushPayload.render(gate, delivery: .normal)) as? [String: Any])
        #expect((gateObject["aps"] as? [String: Any])?["category"] as? String == "APPROVAL_GATE")
        #expect(gateObject["gateId"] as? String == "gate_1" && gate.collapseID == "gate-gate_1")
        let huge = PushPayload.render(
            Self.incident(swarm: String(repeating: "s", count: 256), summary: String(repeating: "é", count: 5000)),
            delivery: .normal
        )
        #expect(huge.count <= APNsNotification.maximumPayloadBytes)
        // A session id that would swell the payload (control characters escape to six bytes) is
        // left out; a plain one is carried.
        func withSession(_ session: String) throws -> [String: Any] {
            let incident = IncidentNotice(
                tenant: "t",
                incidentId: "inc_1",
                rule: "context_near_capacity",
                status: "firing",
                severity: "warning",
                summary: String(repeating: "é", count: 5000),
                swarmId: String(repeating: "s", count: 256),
                agentId: String(repeating: "a", count: 256),
                sessionId: session,
                firedAt: 1,
                resolvedAt: nil,
                webUrl: "https://deck.example/incidents/inc_1"
            )
            let data = PushPayload.render(PushNotice(incident: incident), delivery: .normal)
            #expect(data.count <= APNsNotification.maximumPayloadBytes)
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        #expect(try withSession(String(repeating: "\u{1}", count: 256))["sessionId"] == nil)
        #expect(try withSession(String(repeating: "x", count: 129))["sessionId"] == nil)
        #expect(try withSession("sess-42")["sessionId"] as? String == "sess-42")
        #expect(PushPayload.collapseID("incident-", String(repeating: "x", count: 100)).utf8.count <= 64)
        let summary = try #require(
            try JSONSerialization.jsonObject(with: PushPayload.renderSummary(count: 3, swarm: "checkout", delivery: .normal)) as? [String: Any]
        )
        #expect(((summary["aps"] as? [String: Any])?["alert"] as? [String: Any])?["body"] as? String == "3 more alerts in checkout")
    }

    @Test("decisions follow APNs' answers: retries back off and end, 429 throttles, 410 unregisters, 400 BadDeviceToken marks")
    func decisions() {
        var generator = SystemRandomNumberGenerator()
        let backoff = APNsBackoff(baseMilliseconds: 100, capMilliseconds: 1000)
        func decide(_ status: Int?, _ reason: String? = nil, attempts: Int = 1, expires: Int64 = 1_000_000) -> PushDecision {
            PushDecision.decide(
                status.map { APNsResponse(status: $0, reason: reason, timestamp: $0 == 410 ? 77 : nil, apnsID: nil) },
                attempts: attempts,
                maxAttempts: 5,
                now: 0,
                expiresAt: expires,
                backoff: backoff,
                using: &generator
            )
        }
        #expect(decide(200) == .sent)
        #expect(decide(410, "Unregistered") == .unregistered(since: 77))
        #expect(decide(400, "BadDeviceToken") == .wrongEnvironment)
        #expect(decide(400, "BadCollapseId") == .fail("400 BadCollapseId"))
        if case .retry(let wait) = decide(503, "ServiceUnavailable", attempts: 3) { #expect((200...400).contains(wait)) } else { Issue.record() }
        if case .retry = decide(nil) {} else { Issue.record("no answer is retried") }
        if case .throttle = decide(429, "TooManyRequests") {} else { Issue.record("429 throttles") }
        if case .fail = decide(500, attempts: 5) {} else { Issue.record("the last attempt gives up") }
        if case .fail = decide(500, expires: 10) {} else { Issue.record("an expired push gives up") }
    }
}

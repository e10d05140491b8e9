import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import ControlAPI

@Suite("Agent sessions: each agent's channel registered, capped per tenant, owned by its connector (live)")
struct AgentSessionTests {
    typealias H = ControlHarness

    @Test(
        "polls: 50 wait at once without a thread each; a second poll of a session ends the first at once; an ended session's token is refused and its queue released"
    )
    func polls() async throws {
        let harness = try await ControlHarness()
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            var opened: [String] = []
            for index in 0..<50 { opened.append(try await H.openSession(control, key: key, swarm: "s1", agent: "p\(index)")) }
            let sessions = opened
            let before = processThreads
            let operatorToken = try await harness.token(scopes: [.agentsControl])
            let (got, waiting) = try await withThrowingTaskGroup(of: String?.self) { group in
                for session in sessions {
                    group.addTask {
                        let (_, list) = try await H.call(control, .get, "/v1/agent/commands?waitSeconds=20", token: session)
                        return (list["commands"] as? [[String: Any]])?.first?["agentId"] as? String
                    }
                }
                // Give them time to be waiting, then one swarm pause reaches all fifty.
                try await Task.sleep(for: .seconds(1))
                let waiting = processThreads
                let (accepted, _) = try await H.call(
                    control,
                    .post,
                    "/v1/swarms/s1/control",
                    token: operatorToken,
                    json: ["action": "pause", "reason": "all", "requestId": "all-1"]
                )
                #expect(accepted == .accepted)
                var got: [String?] = []
                for try await agent in group { got.append(agent) }
                return (got, waiting)
            }
            #expect(Set(got.compactMap { $0 }) == Set((0..<50).map { "p\($0)" }))
            #expect(waiting - before < 20, "threads grew from \(before) to \(waiting) while 50 polls waited")

            // A newer poll of a session ends the older at once.
            let clock = ContinuousClock()
            let older = Task {
                let (status, list) = try await H.call(control, .get, "/v1/agent/commands?waitSeconds=25", token: sessions[0])
                return (status, (list["commands"] as? [Any])?.count)
            }
            // Time for the older to be waiting first (else the newer is the one ended), even on a
            // loaded machine; an older poll not ended would wait its 25 s.
            try await Task.sleep(for: .seconds(3))
            let started = clock.now
            let newer = Task { try await H.call(control, .get, "/v1/agent/commands?waitSeconds=2", token: sessions[0]).0 }
            let (olderStatus, olderCount) = try await older.value
            #expect(olderStatus == .ok && olderCount == 0)
            #expect(clock.now - started < .seconds(10), "the older poll waited on")
            _ = try await newer.value

            // Ended by its connector: the token is refused (every replica hears it), the queue is gone.
            let queues = try await harness.commandQueues()
            #expect(try await H.call(control, .delete, "/v1/agent/sessions/current?exitStatus=0", token: sessions[1]).0 == .noContent)
            #expect(try await H.call(control, .delete, "/v1/agent/sessions/current?exitStatus=0", token: sessions[1]).0 == .unauthorized)
            #expect(
                await eventually { (try? await H.call(control, .get, "/v1/agent/commands?waitSeconds=0", token: sessions[1]).0) == .unauthorized }
            )
            #expect(try await harness.commandQueues() == queues - 1)
        }
    }

    @Test(
        "swarm controls address every agent its connector has not said is gone: a forged terminated state changes nothing, an ended session takes its agent out"
    )
    func confirmedGone() async throws {
        let harness = try await ControlHarness()
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            let token = try await harness.token(scopes: [.agentsControl, .streamRead])
            try await harness.announce(ingest, control, key: key, agent: "g1", swarm: "sg")
            try await harness.announce(ingest, control, key: key, agent: "g2", swarm: "sg")
            let g1 = try await H.openSession(control, key: key, swarm: "sg", agent: "g1")
            // A session alone (no event yet) makes an agent a target too.
            _ = try await H.openSession(control, key: key, swarm: "sg", agent: "g3")
            // Anyone holding the ingest key can claim g2 has terminated.
            try await harness.post(ingest, key: key, [H.state(agent: "g2", swarm: "sg", state: "terminated")])
            #expect(
                await eventually {
                    (try? await H.call(control, .get, "/v1/agents/g2", token: token).1["state"] as? String) == "terminated"
                }
            )
            func targets(_ requestID: String) async throws -> [String] {
                let (status, receipt) = try await H.call(
                    control,
                    .post,
                    "/v1/swarms/sg/control",
                    token: token,
                    json: ["action": "terminate", "reason": "stop", "requestId": requestID, "confirm": "TERMINATE"]
                )
                #expect(status == .accepted, "\(receipt)")
                return (receipt["commands"] as? [[String: Any]])?.compactMap { $0["agentId"] as? String } ?? []
            }
            #expect(try await targets("t1") == ["g1", "g2", "g3"])
            // g1's connector says its process is gone: now it is out.
            #expect(try await H.call(control, .delete, "/v1/agent/sessions/current?exitStatus=143", token: g1).0 == .noContent)
            #expect(try await targets("t2") == ["g2", "g3"])
        }
    }

    @Test(
        "a deleted ingest key ends the sessions it opened at a poll after control.agent-session-check-seconds: 401, queue released; a session of another key polls on"
    )
    func keyDeletionEndsSessions() async throws {
        let harness = try await ControlHarness(["CONTROL_AGENT_SESSION_CHECK_SECONDS": "1"])
        try await harness.run { ingest, control in
            let doomed = try await harness.createKey(ingest)
            let kept = try await harness.createKey(ingest)
            let doomedSession = try await H.openSession(control, key: doomed, swarm: "s", agent: "doomed")
            let keptSession = try await H.openSession(control, key: kept, swarm: "s", agent: "kept")
            for session in [doomedSession, keptSession] {
                #expect(try await H.call(control, .get, "/v1/agent/commands?waitSeconds=0", token: session).0 == .ok)
            }
            #expect(try await harness.commandQueues() == 2)

            // sdi_<key id>_<secret>
            let keyID = try #require(doomed.split(separator: "_").dropFirst().first)
            let admin = try await harness.token(subject: "admin", scopes: [.admin])
            #expect(try await H.call(ingest, .delete, "/v1/admin/ingest-keys/\(keyID)", token: admin).0 == .noContent)

            var status = HTTPResponse.Status.ok
            var body: [String: Any] = [:]
            let ended = try await eventually(timeout: .seconds(10)) {
                (status, body) = try await H.call(control, .get, "/v1/agent/commands?waitSeconds=0", token: doomedSession)
                return status != .ok
            }
            #expect(ended && status == .unauthorized, "the session of a deleted key still polls: \(status) \(body)")
            #expect((body["error"] as? [String: Any])?["message"] as? String == "the ingest key that opened this session was revoked")
            #expect(try await eventually { try await harness.commandQueues() == 1 }, "the ended session's queue was not released")
            try await Task.sleep(for: .seconds(1.5))
            #expect(try await H.call(control, .get, "/v1/agent/commands?waitSeconds=0", token: keptSession).0 == .ok)
        }
    }

    @Test("session opens are rate limited per tenant (control.agent-sessions-per-minute): 429 with Retry-After past it, another tenant unaffected")
    func opensRateLimited() async throws {
        let harness = try await ControlHarness(["CONTROL_AGENT_SESSIONS_PER_MINUTE": "5"])
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            // Five at once, then one every 12 s (counted against the time the opens took).
            let bucket = BucketProbe(perMinute: 5)
            var refusal: (HTTPResponse.Status, H.JSON)?
            let (admitted, refused) = try await bucket.untilRefused { index in
                let (status, body) = try await H.call(
                    control,
                    .post,
                    "/v1/agent/sessions",
                    token: key,
                    json: ["swarmId": "s", "agentId": "r\(index)"]
                )
                if status != .created { refusal = (status, body) }
                return status == .created
            }
            #expect(refused && bucket.fits(admitted), "\(admitted) opens admitted in \(bucket.seconds) s at 5 a minute")
            #expect(refusal?.0 == .tooManyRequests && refusal?.1.errorCode == "RateLimited", "\(String(describing: refusal))")
            let otherKey = try await harness.createKey(ingest, tenant: "other-" + harness.tenant)
            _ = try await H.openSession(control, key: otherKey, swarm: "s", agent: "r0")
        }
    }
}

import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import ControlAPI

@Suite("Control-api controls and the agent channel (live NATS, JetStream and Postgres)")
struct ControlTests {
    typealias H = ControlHarness

    /// Rows of `table` in the harness's control schema matching `condition`.
    static func count(_ harness: ControlHarness, _ table: String, where condition: String) async throws -> Int {
        let client = PostgresClient(configuration: try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 2))
        return try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                await client.run()
                return -1
            }
            let rows = try await client.query(
                PostgresQuery(unsafeSQL: "SELECT count(*)::int8 FROM \"\(harness.controlSchema)\".\(table) WHERE \(condition)")
            )
            var count = 0
            for try await value in rows.decode(Int64.self) { count = Int(value) }
            group.cancelAll()
            return count
        }
    }

    @Test(
        "a tenant's control budget holds across its actors, another tenant's is its own; the commands stream keeps its bounds whatever is published"
    )
    func tenantBudgetAndStreamBounds() async throws {
        let harness = try await ControlHarness([
            "CONTROL_CONTROLS_PER_TENANT_PER_MINUTE": "3", "CONTROL_COMMAND_STREAM_MAX_BYTES": "65536",
            "CONTROL_COMMAND_STREAM_MAX_PER_AGENT": "5",
        ])
        let other = "other-" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            try await harness.announce(ingest, control, key: key, agent: "a1", swarm: "s1")
            let theirKey = try await harness.createKey(ingest, tenant: other)
            try await harness.post(ingest, key: theirKey, [ControlHarness.state(agent: "b1", swarm: "s1", state: "running")])
            // An actor a request, all of one tenant: past three (and what came back while they
            // ran, one every 20 s) the tenant's budget refuses.
            let bucket = BucketProbe(perMinute: 3)
            var last = HTTPResponse.Status.accepted
            let (admitted, refused) = try await bucket.untilRefused { actor in
                let token = try await harness.token(subject: "actor-\(actor)")
                let body: [String: Any] = ["action": "pause", "reason": "budget", "requestId": "budget-\(actor)"]
                last = try await H.call(control, .post, "/v1/agents/a1/control", token: token, json: body).0
                return last == .accepted
            }
            #expect(refused && last == .tooManyRequests && bucket.fits(admitted), "\(admitted) admitted in \(bucket.seconds) s, then \(last)")
            // The other tenant's budget is untouched.
            let theirs = try await harness.token(tenant: other)
            _ = await eventually { (try? await H.call(control, .get, "/v1/agents/b1", token: theirs).0) == .ok }
            let (accepted, _) = try await H.call(
                control,
                .post,
                "/v1/agents/b1/control",
                token: theirs,
                json: ["action": "pause", "reason": "mine", "requestId": "theirs-1"]
            )
            #expect(accepted == .accepted)
            // 200 KiB published on one agent's subject and others: the stream stays in its bounds.
            for index in 0..<200 {
                try await harness.live.forge("flood-\(index)", swarm: "s1", agent: index < 100 ? "a1" : "a\(index)", action: .request) {
                    $0.input = String(repeating: "x", count: 1024)
                }
            }
            let nats = try await TestEnvironment.connect()
            let info = try await JetStream(connection: nats).streamInfo(try Subjects(prefix: harness.prefix).controlStreamName)
            await nats.close()
            #expect((info.state.bytes ?? .max) <= 65_536, "\(String(describing: info.state.bytes)) bytes")
            #expect(info.config.maxBytes == 65_536 && info.config.maxMessagesPerSubject == 5)
        }
    }

    @Test("100 concurrent requests with one requestId: one command, one audit row, 100 identical answers")
    func idempotentUnderConcurrency() async throws {
        let harness = try await ControlHarness()
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            try await harness.announce(ingest, control, key: key, agent: "a1", swarm: "s1")
            let token = try await harness.token(scopes: [.agentsControl])
            let request = #"{"action":"pause","reason":"incident 42","requestId":"req-100"}"#
            let answers = try await withThrowingTaskGroup(of: (HTTPResponse.Status, String).self) { group in
                for _ in 0..<100 {
                    // Serialized on one lock, on a loaded machine the last wait past its 5 s and
                    // are answered 503: retried with the same requestId, as a client does.
                    group.addTask {
                        try await LiveCall.retryingUnavailable {
                            try await H.raw(control, .post, "/v1/agents/a1/control", token: token, body: request)
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.count == 100)
            #expect(answers.allSatisfy { $0.0 == .accepted })
            #expect(Set(answers.map(\.1)).count == 1)
            #expect(try await Self.count(harness, "commands", where: "request_id = 'req-100'") == 1)
            #expect(try await Self.count(harness, "audit", where: "request_id = 'req-100'") == 1)
            // One command on JetStream.
            let nats = try await TestEnvironment.connect()
            let subjects = try Subjects(prefix: harness.prefix)
            let info = try await JetStream(connection: nats).streamInfo(subjects.controlStreamName)
            #expect(info.state.messages == 1)
            await nats.close()

            // The same id with another body is a conflict; a later retry still gets the answer.
            let other: [String: Any] = ["action": "pause", "reason": "something else", "requestId": "req-100"]
            let (conflict, body) = try await H.call(control, .post, "/v1/agents/a1/control", token: token, json: other)
            #expect(conflict == .conflict && body.errorCode == "Conflict")
            #expect(try await H.raw(control, .post, "/v1/agents/a1/control", token: token, body: request) == answers[0])
        }
    }

    @Test(
        "an agent opens its session with its ingest key, polls its command with the session token, acknowledges it once with the opaque handle; the request shows the outcome; both are audited"
    )
    func agentChannel() async throws {
        let harness = try await ControlHarness()
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            try await harness.announce(ingest, control, key: key, agent: "a1", swarm: "s1")
            try await harness.announce(ingest, control, key: key, agent: "a2", swarm: "s1")
            let a1 = try await H.openSession(control, key: key, swarm: "s1", agent: "a1")
            let a2 = try await H.openSession(control, key: key, swarm: "s1", agent: "a2")
            // The ingest key itself polls nothing, and a session token is no operator token.
            #expect(try await H.call(control, .get, "/v1/agent/commands?waitSeconds=0", token: key).0 == .unauthorized)
            #expect(try await H.call(control, .get, "/v1/agents/a1", token: a1).0 == .unauthorized)
            let token = try await harness.token(scopes: [.agentsControl, .streamRead])
            let (accepted, receipt) = try await H.call(
                control,
                .post,
                "/v1/swarms/s1/control",
                token: token,
                json: ["action": "terminate", "reason": "runaway", "requestId": "r1", "confirm": "TERMINATE"]
            )
            #expect(accepted == .accepted)
            #expect((receipt["commands"] as? [[String: Any]])?.compactMap { $0["agentId"] as? String } == ["a1", "a2"])
            #expect(
                try await H.call(
                    control,
                    .post,
                    "/v1/agents/a1/control",
                    token: token,
                    json: ["action": "pause", "reason": "second", "requestId": "r1b"]
                ).0 == .accepted
            )

            // Another tenant's session for the same ids does not see the command.
            let otherKey = try await harness.createKey(ingest, tenant: "other-" + harness.tenant)
            let other = try await H.openSession(control, key: otherKey, swarm: "s1", agent: "a1")
            let (_, empty) = try await H.call(control, .get, "/v1/agent/commands?waitSeconds=0", token: other)
            #expect((empty["commands"] as? [Any])?.isEmpty == true)

            let (polled, list) = try await H.call(control, .get, "/v1/agent/commands?waitSeconds=5", token: a1)
            #expect(polled == .ok)
            let command = try #require((list["commands"] as? [[String: Any]])?.first)
            #expect(
                command["action"] as? String == "terminate" && command["reason"] as? String == "runaway" && command["actor"] as? String == "operator"
            )
            let commandID = try #require(command["commandId"] as? String)
            let ackToken = try #require(command["ackToken"] as? String)
            #expect(command["swarmId"] as? String == "s1" && command["agentId"] as? String == "a1")
            #expect(!ackToken.contains("$JS") && !ackToken.contains("."), "the handle shows a NATS subject: \(ackToken)")
            // a1's second command (delivered while the first is unacknowledged).
            let (_, secondList) = try await H.call(control, .get, "/v1/agent/commands?waitSeconds=5", token: a1)
            let secondCommand = try #require((secondList["commands"] as? [[String: Any]])?.first)
            #expect(secondCommand["requestId"] as? String == "r1b")
            let secondToken = try #require(secondCommand["ackToken"] as? String)

            // Handles that are not this command's are refused: another command's, altered ones,
            // one with a NATS protocol line appended, a raw subject.
            var flipped = Array(ackToken.utf8)
            flipped[flipped.count / 2] = flipped[flipped.count / 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            for token in [
                secondToken, String(decoding: flipped, as: UTF8.self), ackToken + "\r\nPUB x 0\r\n\r\nPUB y", ackToken + "A", "$JS.ACK.x.y.1.1.1.1.1",
            ] {
                let (status, body) = try await H.call(
                    control,
                    .post,
                    "/v1/agent/commands/ack",
                    token: a1,
                    json: ["commandId": commandID, "ackToken": token, "outcome": "applied", "state": "terminated"]
                )
                #expect(status == .badRequest && body.errorCode == "InvalidRequest")
            }

            // The right handle from another agent's session, another tenant's, or the ingest key: refused.
            let ack: [String: Any] = [
                "commandId": commandID, "ackToken": ackToken, "outcome": "applied", "state": "terminated", "message": "SIGTERM",
            ]
            #expect(try await H.call(control, .post, "/v1/agent/commands/ack", token: a2, json: ack).0 == .notFound)
            #expect(try await H.call(control, .post, "/v1/agent/commands/ack", token: other, json: ack).0 == .notFound)
            #expect(try await H.call(control, .post, "/v1/agent/commands/ack", token: key, json: ack).0 == .unauthorized)
            for _ in 0..<3 {
                #expect(try await H.call(control, .post, "/v1/agent/commands/ack", token: a1, json: ack).0 == .noContent)
            }
            #expect(try await Self.count(harness, "audit", where: "command_id = '\(commandID)'") == 1)

            let (_, status) = try await H.call(control, .get, "/v1/controls/r1", token: token)
            let commands = try #require(status["commands"] as? [[String: Any]])
            #expect(commands.map { $0["state"] as? String } == ["applied", "pending"])
            #expect(commands.first?["agentState"] as? String == "terminated")

            #expect(
                try await H.call(
                    control,
                    .post,
                    "/v1/agent/commands/ack",
                    token: a1,
                    json: [
                        "commandId": try #require(secondCommand["commandId"] as? String), "ackToken": secondToken, "outcome": "rejected",
                        "state": "terminated",
                    ]
                ).0 == .noContent
            )
            // Acknowledged: not delivered again; a2's command is still waiting for a2.
            let (_, again) = try await H.call(control, .get, "/v1/agent/commands?waitSeconds=1", token: a1)
            #expect((again["commands"] as? [Any])?.isEmpty == true)
            let (_, second) = try await H.call(control, .get, "/v1/agent/commands?waitSeconds=5", token: a2)
            #expect((second["commands"] as? [[String: Any]])?.first?["requestId"] as? String == "r1")

            let (_, audit) = try await H.call(control, .get, "/v1/audit", token: token)
            let entries = try #require(audit["entries"] as? [[String: Any]])
            #expect(entries.map { $0["action"] as? String } == ["ack:pause", "ack:terminate", "pause", "terminate"])
            #expect(entries.last?["actor"] as? String == "operator" && entries.last?["reason"] as? String == "runaway")
            #expect(entries[1]["actor"] as? String == "agent:a1" && entries[1]["outcome"] as? String == "applied: terminated (SIGTERM)")
        }
    }

    @Test("a command committed but never published is published by the dispatcher and delivered")
    func dispatcherPublishesLeftovers() async throws {
        let harness = try await ControlHarness()
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            // Stored as the request path stores it, without its publish (a replica that died
            // between commit and publish).
            var configuration = try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 2)
            configuration.options.additionalStartupParameters = [("search_path", harness.controlSchema)]
            let client = PostgresClient(configuration: configuration)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                let store = ControlStore(client: client, logger: Logger(label: "test"))
                let submission = ControlStore.Submission(
                    tenant: harness.tenant,
                    actor: "operator",
                    target: .agent,
                    targetID: "a9",
                    action: .pause,
                    reason: "lost publish",
                    requestID: "lost-1",
                    agents: [("s9", "a9")],
                    expiresAt: Date().addingTimeInterval(300)
                )
                _ = try await store.submit(submission) {}
                group.cancelAll()
            }
            // The dispatcher runs every 2 s for commands older than 2 s.
            let session = try await H.openSession(control, key: key, swarm: "s9", agent: "a9")
            let (_, list) = try await H.call(control, .get, "/v1/agent/commands?waitSeconds=10", token: session)
            let command = try #require((list["commands"] as? [[String: Any]])?.first)
            #expect(command["requestId"] as? String == "lost-1")
            #expect(try await Self.count(harness, "commands", where: "request_id = 'lost-1' AND published_at IS NOT NULL") == 1)
        }
    }

    @Test("a swarm control addresses at most control.max-swarm-targets agents; a larger swarm is refused with 409, its agents one by one still work")
    func swarmFanOutBound() async throws {
        let harness = try await ControlHarness(["CONTROL_MAX_SWARM_TARGETS": "2"])
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            for agent in ["a1", "a2", "a3"] { try await harness.announce(ingest, control, key: key, agent: agent, swarm: "big") }
            let token = try await harness.token(scopes: [.agentsControl])
            let (refused, body) = try await H.call(
                control,
                .post,
                "/v1/swarms/big/control",
                token: token,
                json: ["action": "pause", "reason": "too many", "requestId": "big-1"]
            )
            #expect(refused == .conflict && body.errorCode == "Conflict")
            #expect(
                try await H.call(
                    control,
                    .post,
                    "/v1/agents/a3/control",
                    token: token,
                    json: ["action": "pause", "reason": "one", "requestId": "big-2"]
                ).0
                    == .accepted
            )
        }
    }

    @Test("per-actor rate limit: new requests past the limit get 429 with Retry-After; replays and other actors do not count")
    func rateLimit() async throws {
        let harness = try await ControlHarness(["CONTROL_CONTROLS_PER_MINUTE": "3"])
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            try await harness.announce(ingest, control, key: key, agent: "a1", swarm: "s1")
            let token = try await harness.token(subject: "alice", scopes: [.agentsControl])
            func pause(_ requestID: String) async throws -> (TestResponse, [String: Any]) {
                try await control.execute(
                    uri: "/v1/agents/a1/control",
                    method: .post,
                    headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
                    body: .init(string: #"{"action":"pause","reason":"r","requestId":"\#(requestID)"}"#)
                ) { response in
                    (response, (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:])
                }
            }
            // Three at once, then one every 20 s: counted against the time the requests took. A
            // replay is answered as before and not counted.
            let bucket = BucketProbe(perMinute: 3)
            #expect(try await pause("rl-0").0.status == .accepted)
            #expect(try await pause("rl-0").0.status == .accepted)
            var limited: (response: TestResponse, body: [String: Any], requestID: String)?
            let (admitted, refused) = try await bucket.untilRefused(from: 1) { index in
                let (response, body) = try await pause("rl-\(index)")
                if response.status != .accepted { limited = (response, body, "rl-\(index)") }
                return response.status == .accepted
            }
            #expect(refused && bucket.fits(admitted), "\(admitted) admitted in \(bucket.seconds) s at 3 a minute (a replay counted?)")
            let refusal = try #require(limited)
            #expect(refusal.response.status == .tooManyRequests && refusal.body.errorCode == "RateLimited")
            #expect(Int(refusal.response.headers[.retryAfter] ?? "") ?? 0 >= 1)
            #expect(try await Self.count(harness, "audit", where: "request_id = '\(refusal.requestID)'") == 0)
            let bob = try await harness.token(subject: "bob", scopes: [.agentsControl])
            #expect(
                try await H.call(
                    control,
                    .post,
                    "/v1/agents/a1/control",
                    token: bob,
                    json: ["action": "pause", "reason": "r", "requestId": "rl-bob"]
                ).0 == .accepted
            )
        }
    }
}

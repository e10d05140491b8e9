import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@Suite("An agent's queue: shared by replicas, kept across its sessions (live)")
struct AgentQueueReplicaTests {
    typealias H = ControlHarness

    @Test(
        "one agent's session polls two control-api replicas at once, acknowledging what it gets: twenty commands arrive once each, and the queue's floor passes them all"
    )
    func twoReplicasOnePoller() async throws {
        let harness = try await ControlHarness()
        try await harness.run(.live) { ingest, first in
            try await harness.control().test(.live) { second in
                let key = try await harness.createKey(ingest)
                try await harness.announce(ingest, first, key: key, agent: "shared", swarm: "s")
                let session = try await H.openSession(first, key: key, swarm: "s", agent: "shared")
                let operatorToken = try await harness.token(scopes: [.agentsControl])
                let count = 20
                for index in 0..<count {
                    let (status, receipt) = try await H.call(
                        index % 2 == 0 ? first : second,
                        .post,
                        "/v1/agents/shared/control",
                        token: operatorToken,
                        json: ["action": index % 2 == 0 ? "pause" : "resume", "reason": "shared", "requestId": "r\(index)"]
                    )
                    #expect(status == .accepted, "\(receipt)")
                }
                // Two pollers, one on each replica, at once; each acknowledges what it gets.
                let got = try await withThrowingTaskGroup(of: [String].self) { group in
                    for replica in [first, second] {
                        group.addTask {
                            var got: [String] = []
                            let deadline = ContinuousClock.now + .seconds(60)
                            while ContinuousClock.now < deadline {
                                let (status, requestIDs) = try await H.pollAndAcknowledge(replica, session: session, wait: 2)
                                #expect(status == .ok)
                                if requestIDs.isEmpty { break }
                                got += requestIDs
                            }
                            return got
                        }
                    }
                    var all: [String] = []
                    for try await got in group { all += got }
                    return all
                }
                #expect(got.count == count, "\(got)")
                #expect(Set(got) == Set((0..<count).map { "r\($0)" }), "\(got)")
                // Every command done: the queue's floor passed them all, nothing is left in flight.
                let (_, rest) = try await H.call(second, .get, "/v1/agent/commands?waitSeconds=0", token: session)
                #expect((rest["commands"] as? [Any])?.isEmpty ?? true, "\(rest)")
                // Each command has its own stream sequence: the floor is past the twentieth.
                #expect(try await harness.agentQueueFloor(agent: "shared") >= Int64(count))
                #expect(try await harness.agentDeliveries(agent: "shared") == 0)
            }
        }
    }

    @Test(
        "an agent's next session goes on from where its last one left (no acknowledged command again, one sent meanwhile delivered); past control.max-agent-sessions released queues the oldest go"
    )
    func releasedQueues() async throws {
        let harness = try await ControlHarness(["CONTROL_MAX_AGENT_SESSIONS": "2"])
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            try await harness.announce(ingest, control, key: key, agent: "r1", swarm: "s")
            let operatorToken = try await harness.token(scopes: [.agentsControl])
            @Sendable func command(_ requestID: String) async throws {
                let (status, receipt) = try await H.call(
                    control,
                    .post,
                    "/v1/agents/r1/control",
                    token: operatorToken,
                    json: ["action": "pause", "reason": "kept", "requestId": requestID]
                )
                #expect(status == .accepted, "\(receipt)")
            }
            @Sendable func poll(_ session: String, wait: Int) async throws -> [String] {
                try await H.pollAndAcknowledge(control, session: session, wait: wait, state: "paused").requestIDs
            }
            let first = try await H.openSession(control, key: key, swarm: "s", agent: "r1")
            try await command("before")
            #expect(try await poll(first, wait: 10) == ["before"])
            #expect(try await H.call(control, .delete, "/v1/agent/sessions/current?exitStatus=0", token: first).0 == .noContent)
            // Sent while no session is open: it waits in the stream.
            try await command("meanwhile")
            let second = try await H.openSession(control, key: key, swarm: "s", agent: "r1")
            #expect(try await poll(second, wait: 10) == ["meanwhile"])
            #expect(try await poll(second, wait: 1) == [])
            #expect(try await H.call(control, .delete, "/v1/agent/sessions/current?exitStatus=0", token: second).0 == .noContent)

            // Three more agents' sessions end: two released queues are kept, the oldest goes.
            for agent in ["r2", "r3", "r4"] {
                let session = try await H.openSession(control, key: key, swarm: "s", agent: agent)
                #expect(try await H.call(control, .delete, "/v1/agent/sessions/current?exitStatus=0", token: session).0 == .noContent)
            }
            #expect(try await harness.releasedQueues() == 2)
            #expect(try await harness.agentQueueFloor(agent: "r1") == -1, "the oldest released queue was kept")
        }
    }
}

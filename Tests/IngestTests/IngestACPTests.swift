import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import Testing

@Suite("Ingest ACP frames (live NATS + Postgres)")
struct IngestACPTests {
    struct Answer: Decodable {
        var status: String
        var seq: Int64
        var threadSeq: Int64?
    }

    static func append(
        _ client: some TestClientProtocol,
        key: String,
        thread: String,
        msgID: String,
        body: String,
        direction: String = "agent_to_client"
    ) async throws -> (HTTPResponse.Status, Answer?) {
        try await client.execute(
            uri: "/v1/ingest/acp/\(thread)?swarmId=s1&agentId=a1&sessionId=sess-1&direction=\(direction)&msgId=\(msgID)",
            method: .post,
            headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(string: body)
        ) { response in
            (response.status, try? JSONDecoder().decode(Answer.self, from: Data(buffer: response.body)))
        }
    }

    @Test("envelopes get per-thread seqs, keep their bodies byte for byte, de-duplicate per thread, and stream")
    func threads() async throws {
        let harness = try await IngestHarness()
        let nats = try await NATSConnection.connect(NATSConfiguration(servers: [try harness.environment["NATS_URL"]!], name: "observer"))
        let feed = try await nats.subscribe(to: try Subjects(prefix: harness.prefix).events(tenant: harness.tenant))
        try await nats.flush()
        let oddBody = #"{ "jsonrpc":"2.0",  "method":"session/update", "params":{"b":1,"a":[1, 2, "é"]} }"#
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let bodies = [
                ("t1", "m1", #"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}"#),
                ("t2", "m1", #"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{}}"#),
                ("t1", "m2", oddBody),
                ("t1", "m3", #"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}"#),
                ("t2", "m2", #"{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"boom"}}"#),
            ]
            var answers: [Answer] = []
            for (thread, msgID, body) in bodies {
                let (status, answer) = try await Self.append(client, key: key, thread: thread, msgID: msgID, body: body)
                #expect(status == .ok, "\(thread) \(msgID)")
                answers.append(try #require(answer))
            }
            #expect(answers.map(\.seq) == [1, 2, 3, 4, 5])
            #expect(answers.map(\.threadSeq) == [1, 1, 2, 3, 2])

            let again = try await Self.append(client, key: key, thread: "t1", msgID: "m2", body: oddBody)
            #expect(again.1?.status == "duplicate")
            #expect(again.1?.seq == 3)
            #expect(again.1?.threadSeq == 2)

            let postgres = PostgresClient(
                configuration: try PostgresClient.Configuration(url: try harness.environment["POSTGRES_URL"]!, maxConnections: 2)
            )
            let running = Task { await postgres.run() }
            defer { running.cancel() }
            let rows = try await postgres.query(
                "SELECT body, checksum, kind FROM \(unescaped: harness.schema).acp_envelopes WHERE tenant_id = \(harness.tenant) AND thread_id = 't1' AND thread_seq = 2"
            )
            for try await (body, checksum, kind) in rows.decode((ByteBuffer, ByteBuffer, Int16).self) {
                #expect(Array(buffer: body) == Array(oddBody.utf8))
                #expect(Array(buffer: checksum) == BLAKE3.hash(Array(oddBody.utf8)))
                #expect(kind == 3)  // notification
            }

            var iterator = feed.makeAsyncIterator()
            var envelopes: [BusEventEnvelope] = []
            for _ in 0..<5 {
                envelopes.append(try BusEventEnvelope(serializedBytes: try #require(await iterator.next()).payload))
            }
            #expect(envelopes.map(\.threadSeq) == [1, 1, 2, 3, 2])
            #expect(envelopes.allSatisfy { $0.kind == .acp })
            #expect(envelopes[4].severity == .error)
            let frame = try #require(try JSONSerialization.jsonObject(with: envelopes[2].frame) as? [String: Any])
            let envelope = try #require(frame["envelope"] as? [String: Any])
            #expect(envelope["thread_id"] as? String == "t1")
            #expect(envelope["seq"] as? Int == 2)
            #expect(envelope["kind"] as? String == "notification")
            #expect(envelope["msg_id"] as? String == "m2")
            // Seed 003's blake3(body), of the body's bytes as received, as b3sum prints it.
            #expect(envelope["checksum"] as? String == BLAKE3.hex(Array(oddBody.utf8)))
            #expect(String(decoding: envelopes[2].frame, as: UTF8.self).contains(oddBody))
        }
        await nats.drain()
    }

    @Test("concurrent appends to one thread: thread seqs 1…200 exactly once")
    func concurrentThread() async throws {
        let harness = try await IngestHarness()
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let threadSeqs = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        var seqs: [Int64] = []
                        for index in 0..<50 {
                            let body = #"{"jsonrpc":"2.0","method":"session/update","params":{"n":\#(index)}}"#
                            let (_, answer) = try await Self.append(client, key: key, thread: "busy", msgID: "w\(writer)-\(index)", body: body)
                            if let threadSeq = answer?.threadSeq { seqs.append(threadSeq) }
                        }
                        return seqs
                    }
                }
                return try await group.reduce(into: [Int64]()) { $0 += $1 }
            }
            #expect(threadSeqs.sorted() == Array(1...200))
        }
    }

    @Test("bad ACP input answers 400 in the envelope")
    func badInput() async throws {
        let harness = try await IngestHarness()
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let cases: [(String, String, String)] = [
                ("not JSON", "{nope", "agent_to_client"),
                ("not JSON-RPC", #"{"hello":"world"}"#, "agent_to_client"),
                ("wrong version", #"{"jsonrpc":"1.0","method":"x"}"#, "agent_to_client"),
                ("array body", #"[{"jsonrpc":"2.0","method":"x"}]"#, "agent_to_client"),
                ("bad direction", #"{"jsonrpc":"2.0","method":"x"}"#, "sideways"),
            ]
            for (name, body, direction) in cases {
                let (status, _) = try await Self.append(client, key: key, thread: "t", msgID: "x", body: body, direction: direction)
                #expect(status == .badRequest, "\(name)")
            }
            try await client.execute(
                uri: "/v1/ingest/acp/t?swarmId=s&agentId=a&direction=agent_to_client",
                method: .post,
                headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"jsonrpc":"2.0","method":"x"}"#)
            ) { response in
                #expect(response.status == .badRequest)
                #expect(String(buffer: response.body).contains("msgId"))
            }
        }
    }
}

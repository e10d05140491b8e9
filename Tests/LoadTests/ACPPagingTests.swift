import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import ServiceHarnesses
import ServiceKit
import StreamTestSupport
import TestSupport
import Testing

@testable import StreamFanout

@Suite("Stream-fanout ACP pages cut by bytes and the ACP body cap (live NATS + Postgres, ingest in process)", .tags(.heavy))
struct ACPPagingTests {
    /// A JSON-RPC notification of exactly `bytes` bytes whose `params.n` is `n` and whose
    /// `params.text` is ``padding(_:bytes:)`` x's.
    static func body(_ n: Int, bytes: Int) -> String {
        Self.head(n) + String(repeating: "x", count: Self.padding(n, bytes: bytes)) + Self.tail
    }

    static func head(_ n: Int) -> String { #"{"jsonrpc":"2.0","method":"session/update","params":{"n":\#(n),"text":""# }
    static let tail = #""}}"#

    /// The length of `params.text` in ``body(_:bytes:)``.
    static func padding(_ n: Int, bytes: Int) -> Int { bytes - Self.head(n).utf8.count - Self.tail.utf8.count }

    /// The `params.n` of an envelope's body and the length of its `params.text`.
    static func content(_ envelope: [String: Any]) -> (n: Int?, text: Int?) {
        let params = (envelope["body"] as? [String: Any])?["params"] as? [String: Any]
        return (params?["n"] as? Int, (params?["text"] as? String)?.utf8.count)
    }

    @Test(
        "acp.cache.fetch and a subscribe replay page 9 MB of a thread by 4 MiB: each envelope once, in order, whole; an ACP body over the cap is 413"
    )
    func fetchAndReplayPagedByBytes() async throws {
        let harness = try await FanoutHarness()
        let bytes = 700_000
        let count = 13
        // Five bodies (3.5 MB, plus their envelopes' few hundred bytes each) stay under the cut;
        // the sixth reaches it (4.2 MB ≥ 4 MiB) and ends the page: pages of 6, 6 and 1.
        #expect(ACPCache.pageBytes == 4 << 20)
        #expect(5 * bytes + 5 * 4096 < ACPCache.pageBytes && 6 * bytes >= ACPCache.pageBytes)
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            for n in 1...count {
                try await harness.postACP(ingest, key: key, thread: "big", body: Self.body(n, bytes: bytes), msgID: "m\(n)")
            }
            // One byte over ingest.max-acp-body-bytes (1 MiB by default): refused, not stored.
            let oversized = Self.body(count + 1, bytes: (1 << 20) + 1)
            let refused = try await ingest.execute(
                uri: "/v1/ingest/acp/big?swarmId=s1&agentId=a1&direction=agent_to_client&msgId=m-over",
                method: .post,
                headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                body: ByteBuffer(string: oversized)
            ) { response in
                (response.status, try? JSONDecoder().decode(ErrorEnvelope.self, from: Data(buffer: response.body)))
            }
            #expect(refused.0 == .contentTooLarge)
            #expect(refused.1?.error.code == .payloadTooLarge)

            try await harness.fanout().test(.live) { fanout in
                let port = try #require(fanout.port)
                let client = StreamClient(port: port, token: try await harness.token(), path: "/v1/acp", protocolVersion: nil)

                // Fetch the thread page by page, each from the previous page's next_seq.
                var pages: [[Int]] = []
                var from = 1
                while from <= count, pages.count < count {
                    let request = FanoutHarness.acpRequest(pages.count + 1, "acp.cache.fetch", ["thread_id": "big", "from_seq": from, "limit": 500])
                    let texts = try await client.runRaw(sending: [request])
                    let text = try #require(texts.first)
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
                    let result = try #require(object["result"] as? [String: Any], "\(text.prefix(300))")
                    let envelopes = try #require(result["envelopes"] as? [[String: Any]])
                    let seqs = envelopes.compactMap { $0["seq"] as? Int }
                    try #require(!seqs.isEmpty && seqs.count == envelopes.count, "page from \(from): \(seqs)")
                    #expect(result["head_seq"] as? Int == count, "the oversized body was not stored")
                    #expect(result["next_seq"] as? Int == (seqs.last ?? 0) + 1)
                    // Whole: each envelope holds its own body, every byte of it.
                    for (envelope, seq) in zip(envelopes, seqs) {
                        let content = Self.content(envelope)
                        #expect(content.n == seq)
                        #expect(content.text == Self.padding(seq, bytes: bytes))
                    }
                    // A page holds at most the cut plus the envelope that reached it.
                    #expect(text.utf8.count < ACPCache.pageBytes + bytes + (64 << 10), "page from \(from): \(text.utf8.count) bytes")
                    // A page that is not the last was cut by bytes: its bodies alone reach the cut.
                    if seqs.last != count {
                        #expect(seqs.count * bytes >= ACPCache.pageBytes)
                    }
                    pages.append(seqs)
                    from = (result["next_seq"] as? Int) ?? count + 1
                }
                #expect(pages == [Array(1...6), Array(7...12), [13]])

                // Rows still cut before bytes: two of these are far under 4 MiB.
                let small = try await client.runRaw(sending: [
                    FanoutHarness.acpRequest(99, "acp.cache.fetch", ["thread_id": "big", "from_seq": 7, "limit": 2])
                ])
                let smallText = try #require(small.first)
                let smallResult = try #require(
                    (try JSONSerialization.jsonObject(with: Data(smallText.utf8)) as? [String: Any])?["result"] as? [String: Any]
                )
                #expect((smallResult["envelopes"] as? [[String: Any]])?.map { $0["seq"] as? Int } == [7, 8])
                #expect(smallResult["next_seq"] as? Int == 9)

                // A subscribe replays the same 9 MB in byte-cut steps: a step cut by bytes is not
                // taken for the end of the thread.
                let replayed = try await client.run(
                    sending: [FanoutHarness.acpRequest(100, "acp.cache.subscribe", ["thread_id": "big", "from_seq": 1, "live": true])],
                    timeout: .seconds(40)
                ) { $0["seq"] as? Int == count }
                let subscribed = try #require(replayed.frames.first?["result"] as? [String: Any])
                #expect(subscribed["head_seq"] as? Int == count)
                let envelopes = Array(replayed.frames.dropFirst())
                #expect(envelopes.map { $0["seq"] as? Int ?? -1 } == Array(1...count))
                #expect(
                    envelopes.allSatisfy { envelope in
                        let seq = envelope["seq"] as? Int ?? 0
                        let content = Self.content(envelope)
                        return content.n == seq && content.text == Self.padding(seq, bytes: bytes)
                    }
                )
            }
        }
    }
}

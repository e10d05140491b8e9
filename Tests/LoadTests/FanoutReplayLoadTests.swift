import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOPosix
import PlainWebSocket
import ServiceHarnesses
import ServiceKit
import StreamTestSupport
import Synchronization
import TestSupport
import Testing

@testable import StreamFanout

@Suite("Stream-fanout replays of megabytes (live NATS + Postgres, ingest in process)", .tags(.heavy))
struct FanoutReplayLoadTests {
    @Test("a replay of 7 MB of 60 KB events crosses the 4 MiB page cut by bytes: every seq once, in order, whole")
    func replayPagesCutByBytes() async throws {
        let harness = try await FanoutHarness()
        let message = String(repeating: "x", count: 60_000)
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            for batch in 0..<6 {
                try await harness.post(ingest, key: key, (0..<20).map { logEvent("big-\(batch)-\($0)", message: message) })
            }
            try await harness.fanout().test(.live) { fanout in
                let client = StreamClient(port: try #require(fanout.port), token: try await harness.token())
                let (frames, _, _) = try await client.run(
                    sending: [subscribe(lastEventId: 0, extra: ["maxEventsPerSecond": 10_000])]
                ) { ($0["seq"] as? Int) == 120 }
                // 120 × 60 KB is more than one page (StreamSession.pageBytes, 4 MiB): the replay
                // reads at least two, and the seam loses and repeats nothing.
                #expect(120 * message.utf8.count > 4 << 20)
                #expect(frames.seqs == Array(1...120))
                #expect(frames.filter { $0["seq"] != nil }.allSatisfy { ($0["message"] as? String)?.utf8.count == 60_000 })
                #expect(!frames.contains { $0["type"] as? String == "gap" })
            }
        }
    }
}

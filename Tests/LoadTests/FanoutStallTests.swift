import Foundation
import HummingbirdTesting
import ServiceHarnesses
import StreamTestSupport
import TestSupport
import Testing

/// Apart from the other suites: it moves 32 MB, and the test command runs it after them, beside
/// the fuzz test, so it neither slows nor is slowed by the timing-sensitive ones.
@Suite("Stream-fanout stalled sockets (live, beside the fuzzes)", .tags(.heavy))
struct FanoutStallTests {
    @Test("a socket that accepts nothing for fanout.stalled-seconds is closed under its waiting writer, not kept")
    func stalledSocket() async throws {
        let harness = try await FanoutHarness(fanout: ["FANOUT_STALLED_SECONDS": "1"])
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            try await harness.fanout().test(.live) { fanout in
                let port = try #require(fanout.port)
                let total = 8000
                // 8000 events of 4 KB (32 MB) in the log first, so the replay fills the socket and
                // the idle client's buffers (about 10 MB together here) well within the client's
                // pause, even while the fuzz test beside it slows the server down (a debug build
                // under that load was seen writing under 1 MB/s).
                let body = String(repeating: "x", count: 4000)
                for batch in 0..<(total / 100) {
                    try await harness.post(ingest, key: key, (0..<100).map { logEvent("st-\(batch)-\($0)", message: body) })
                }
                // Then a client that reads nothing for 40 s: the fanout's writer waits on a
                // full socket. A timeout (the connection kept open) throws and fails the test.
                var stuck = StreamClient(port: port, token: try await harness.token())
                stuck.readDelay = .seconds(40)
                let started = ContinuousClock.now
                let result = try await stuck.run(
                    sending: [subscribe(lastEventId: 0, extra: ["maxEventsPerSecond": 10000])],
                    timeout: .seconds(150),
                    toleratingDrop: true
                ) { ($0["seq"] as? Int) == total }
                // Ended by the server before the last event, not by the client's predicate; and
                // while the client still read nothing: the socket was closed under the writer
                // (no close frame), not left until the client came back to read one.
                #expect(result.frames.seqs.last.map { $0 < Int64(total) } ?? true, "the stalled connection was kept and got everything")
                #expect(result.close == nil, "the server waited for the stalled client: \(String(describing: result.close))")
                #expect(ContinuousClock.now - started < .seconds(140))
            }
        }
    }
}

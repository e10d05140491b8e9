import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import StreamTestSupport
import Synchronization
import TestSupport
import Testing

@Suite("Stream-fanout replicas (live, the real executable)")
struct FanoutReplicaTests {
    /// How long a client waits for the last of the writes: a guard against a hang, not a
    /// speed test (on two loaded cores, ingest in the test process has taken 35 s for them).
    static let writesTimeout = Duration.seconds(120)

    /// A stream-fanout process on a free port.
    static func start(_ harness: FanoutHarness) throws -> (Process, Int) {
        let port = try freeLoopbackPort()
        let process = Swarmdeckd.process("stream-fanout")
        var environment = try harness.environment()
        environment["HTTP_PORT"] = String(port)
        environment["HTTP_HOST"] = "127.0.0.1"
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, port)
    }

    @Test("kill -9 of a replica mid-stream: its client resumes on another with nothing lost or repeated")
    func replicaKilled() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            let (first, firstPort) = try Self.start(harness)
            let (second, secondPort) = try Self.start(harness)
            defer {
                for process in [first, second] where process.isRunning { kill(process.processIdentifier, SIGKILL) }
            }
            try await offPool {
                try waitForPort(firstPort)
                try waitForPort(secondPort)
            }
            let token = try await harness.token()
            let total = 400

            async let writes: Void = {
                for batch in 0..<(total / 10) {
                    try await harness.post(ingest, key: key, (0..<10).map { logEvent("w-\(batch)-\($0)") })
                    try await Task.sleep(for: .milliseconds(15))
                }
            }()
            let seen = Counted()
            let pid = first.processIdentifier
            let before = try await StreamClient(port: firstPort, token: token).run(
                sending: [subscribe(lastEventId: 0)],
                timeout: Self.writesTimeout,
                toleratingDrop: true
            ) {
                frame in
                if frame["seq"] != nil, seen.next() == 100 { kill(pid, SIGKILL) }
                return false
            }
            try await offPool { first.waitUntilExit() }
            #expect(first.terminationReason == .uncaughtSignal)
            let last = try #require(before.frames.seqs.last)
            #expect(before.frames.seqs == Array(1...last))

            let after = try await StreamClient(port: secondPort, token: token).run(
                sending: [subscribe(lastEventId: last)],
                timeout: Self.writesTimeout
            ) {
                ($0["seq"] as? Int) == total
            }
            try await writes
            #expect(after.frames.seqs == Array((last + 1)...Int64(total)))
        }
    }

    @Test("clients disconnect and reconnect at random points while ingest writes; each ends with exactly the full sequence")
    func chaos() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            try await harness.fanout().test(.live) { fanout in
                let port = try #require(fanout.port)
                let token = try await harness.token()
                let total = 600
                async let writes: Void = {
                    for batch in 0..<(total / 20) {
                        try await harness.post(ingest, key: key, (0..<20).map { logEvent("c-\(batch)-\($0)", agent: $0 % 2 == 0 ? "even" : "odd") })
                        try await Task.sleep(for: .milliseconds(10))
                    }
                }()
                // Half the clients want everything, half only agent "even".
                let results = try await withThrowingTaskGroup(of: (Bool, [Int64]).self) { group in
                    for client in 0..<8 {
                        group.addTask {
                            let onlyEven = client % 2 == 1
                            let filters: [String: Any]? = onlyEven ? ["agentIds": ["even"]] : nil
                            var seqs: [Int64] = []
                            var last: Int64 = 0
                            let target: Int64 = onlyEven ? Int64(total - 1) : Int64(total)
                            while last < target {
                                // Read a random number of events, then drop the connection.
                                let stopAfter = Int.random(in: 1...120)
                                let count = Counted()
                                let part = try await StreamClient(port: port, token: token).run(sending: [
                                    subscribe(lastEventId: last, filters: filters)
                                ]) { frame in
                                    guard let seq = frame["seq"] as? Int else { return false }
                                    return count.next() >= stopAfter || Int64(seq) == target
                                }
                                seqs += part.frames.seqs
                                last = seqs.last ?? last
                            }
                            return (onlyEven, seqs)
                        }
                    }
                    return try await group.reduce(into: [(Bool, [Int64])]()) { $0.append($1) }
                }
                try await writes
                // Seqs 1…600 alternate agents: even positions (0, 2, …) in each batch of 20 are
                // "even", i.e. odd seqs.
                let everything = Array(1...Int64(total))
                for (onlyEven, seqs) in results {
                    #expect(seqs == (onlyEven ? everything.filter { $0 % 2 == 1 } : everything))
                }
            }
        }
    }
}

import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Drives ingest's native endpoint: `connections` workers, each posting batches of `batch`
/// events back to back, paced to `rate` events/s in total (0 = as fast as they go).
struct IngestLoad {
    var url: String
    var key: String
    var connections: Int
    var batch: Int
    var rate: Double
    var duration: Duration

    struct Report {
        var accepted = 0
        var requests = 0
        var errors: [String: Int] = [:]
        var latencies: [Duration] = []
        var elapsed: Duration = .zero

        var eventsPerSecond: Double { Double(self.accepted) / self.elapsed.secondsDouble }

        func percentile(_ p: Double) -> Duration {
            guard !self.latencies.isEmpty else { return .zero }
            let sorted = self.latencies.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }

        mutating func merge(_ other: Report) {
            self.accepted += other.accepted
            self.requests += other.requests
            self.errors.merge(other.errors, uniquingKeysWith: +)
            self.latencies += other.latencies
        }

        func printed(title: String) -> String {
            let errors = self.errors.isEmpty ? "none" : self.errors.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: ", ")
            return String(
                format: "%@: %.0f events/s accepted (%d events, %d requests in %.1f s); ack latency p50 %.2f ms, p99 %.2f ms; errors: %@",
                title, self.eventsPerSecond, self.accepted, self.requests, self.elapsed.secondsDouble,
                self.percentile(0.5).millisecondsDouble, self.percentile(0.99).millisecondsDouble, errors
            )
        }
    }

    func run() async throws -> Report {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: self.connections)
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(30))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let run = String(UInt64.random(in: 0..<UInt64.max), radix: 36)
        let start = ContinuousClock.now
        let deadline = start + self.duration
        // Each worker sends one batch every `interval` when paced.
        let interval: Duration? = self.rate > 0 ? .seconds(Double(self.batch * self.connections) / self.rate) : nil
        var report = try await withThrowingTaskGroup(of: Report.self) { group in
            for worker in 0..<self.connections {
                group.addTask {
                    try await self.worker(worker, run: run, client: client, deadline: deadline, interval: interval)
                }
            }
            var total = Report()
            for try await part in group { total.merge(part) }
            return total
        }
        report.elapsed = ContinuousClock.now - start
        try await client.shutdown()
        return report
    }

    private func worker(_ worker: Int, run: String, client: HTTPClient, deadline: ContinuousClock.Instant, interval: Duration?) async throws -> Report {
        var report = Report()
        var sequence = 0
        var next = ContinuousClock.now
        while ContinuousClock.now < deadline {
            if let interval {
                if next > ContinuousClock.now { try await Task.sleep(until: next) }
                next += interval
            }
            var body = "{\"events\":["
            body.reserveCapacity(self.batch * 150)
            for index in 0..<self.batch {
                if index > 0 { body += "," }
                body += "{\"msgId\":\"lg-\(run)-\(worker)-\(sequence)\",\"swarmId\":\"load\",\"agentId\":\"agent-\(worker)\",\"kind\":\"log\",\"level\":\"info\",\"message\":\"load test event \(sequence)\"}"
                sequence += 1
            }
            body += "]}"
            var request = HTTPClientRequest(url: self.url + "/v1/ingest/events")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(self.key)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
            let sent = ContinuousClock.now
            do {
                let response = try await client.execute(request, timeout: .seconds(30))
                let answer = try await response.body.collect(upTo: 64 << 20)
                report.latencies.append(ContinuousClock.now - sent)
                report.requests += 1
                if response.status == .ok {
                    report.accepted += Self.acceptedCount(answer)
                } else {
                    report.errors["HTTP \(response.status.code)", default: 0] += 1
                }
            } catch {
                report.errors["\(type(of: error))", default: 0] += 1
            }
        }
        return report
    }

    private static func acceptedCount(_ body: ByteBuffer) -> Int {
        struct Counts: Decodable { var accepted: Int }
        return (try? JSONDecoder().decode(Counts.self, from: body))?.accepted ?? 0
    }
}


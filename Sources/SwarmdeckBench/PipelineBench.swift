import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ServiceKit

/// `swarmdeck-bench pipeline`: pipeline-runner's own cost, on the running stack (its runner
/// against the stack's provider, anthropic-local unless a real key is configured). Starts
/// `--pipelines` unattended three-stage pipelines at once, spread over `--tenants` tenants of
/// their own (each under pipeline.creates-per-minute and pipeline.max-active-per-tenant), waits
/// until every one completes, and reports, per stage, the orchestration overhead: the stage's
/// time without its provider call (`durationMs - providerMs`) plus the gap since the previous
/// stage finished (or since the pipeline was created, for the first). Then the runner's
/// resident memory before, at the peak of and after the run.
struct PipelineBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipeline",
        abstract: "Orchestration overhead per stage (provider time excluded) and memory, with N concurrent pipelines on one runner."
    )

    @Option(help: "Pipelines run one at a time first (the overhead alone).")
    var sequential = 20

    @Option(help: "Pipelines started at once.")
    var pipelines = 100

    @Option(help: "Tenants they are spread over (each gets an ingest key, so its log exists; 4 planner calls of a tenant run at once).")
    var tenants = 25

    @Option(help: "The runner's pid file (its memory is reported).")
    var pidFile = ".swarmdeck/run/pipeline-runner.pid"

    @Option(help: "Seconds to wait for every pipeline to complete.")
    var timeout = 300.0

    @OptionGroup var stack: StackBenchOptions

    typealias JSON = [String: Any]

    func run() async throws {
        let signer = try await self.stack.signer()
        // A connection per pipeline created at once (their requests wait on the planner).
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: self.pipelines + 8)
        configuration.timeout = .init(connect: .seconds(60), read: .seconds(120))
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            try await self.measure(signer: signer, http: http)
            try await http.shutdown()
        } catch {
            try? await http.shutdown()
            throw error
        }
    }

    private func measure(signer: AccessTokenSigner, http: HTTPClient) async throws {
        let run = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let pid = Int32((try? String(contentsOfFile: self.pidFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        print(
            "pipeline-bench: \(self.sequential) pipelines one at a time, then \(self.pipelines) at once over \(self.tenants) tenants, via \(self.stack.url); runner pid \(pid)"
        )
        var tokens: [String] = []
        for index in 0..<self.tenants {
            let tenant = "pipeline-bench-\(run)-\(index)"
            let admin = try await signer.sign(tenant: tenant, subject: "bench", scopes: [.admin])
            _ = try await self.call(http, .POST, "/v1/admin/ingest-keys", token: admin, body: ["name": "pipeline bench"], expect: 201)
            tokens.append(admin)
        }

        // Alone: what the runner adds to a stage when nothing else runs.
        var alone: [JSON] = []
        for index in 0..<self.sequential {
            alone += try await self.batch(http, tokens: [tokens[index % tokens.count]], count: 1, label: "alone \(index)").done
        }
        let (aloneOverheads, aloneProviders, aloneWithin, aloneGaps) = Self.stageTimes(alone)
        print("one pipeline at a time: \(alone.count) pipelines, \(aloneOverheads.count) stages")
        print(Self.line("  orchestration overhead per stage (provider time excluded)", aloneOverheads))
        print(Self.line("    of which within the stage (start to finish without the call)", aloneWithin))
        print(Self.line("    of which before the stage (since the previous one, or the plan)", aloneGaps))
        print(Self.line("  provider call per stage", aloneProviders))

        let before = Memory.rss(pid)
        let (done, createdIn, total, peak) = try await self.batch(http, tokens: tokens, count: self.pipelines, label: "concurrent", pid: pid)
        try await Task.sleep(for: .seconds(2))
        let after = Memory.rss(pid)
        let (overheads, providers, _, _) = Self.stageTimes(done)
        print(
            "\(self.pipelines) at once: all \(done.count) completed in \(Self.seconds(total)) (created in \(Self.seconds(createdIn))); \(overheads.count) stages"
        )
        print(Self.line("  orchestration overhead per stage (provider time excluded)", overheads))
        print(Self.line("  provider call per stage", providers))
        let mib = { (bytes: Int) in String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        print(
            "  runner memory (RSS): before \(mib(before)), peak \(mib(peak)), after \(mib(after)); peak − before per pipeline "
                + String(format: "%.1f KiB", Double(peak - before) / 1024 / Double(max(1, self.pipelines)))
        )
    }

    /// Creates `count` unattended pipelines at once (spread over `tokens`' tenants) and waits for
    /// all to complete: the pipelines, how long creating and completing took, and the runner's
    /// peak memory meanwhile.
    private func batch(
        _ http: HTTPClient,
        tokens: [String],
        count: Int,
        label: String,
        pid: Int32 = 0
    ) async throws -> (done: [JSON], created: Duration, total: Duration, peak: Int) {
        let started = ContinuousClock.now
        let created = try await withThrowingTaskGroup(of: (String, String).self) { group in
            for index in 0..<count {
                let token = tokens[index % tokens.count]
                group.addTask {
                    let answer = try await self.call(
                        http,
                        .POST,
                        "/v1/pipelines",
                        token: token,
                        body: ["goal": "Bench pipeline \(label) \(index)", "unattended": true],
                        expect: 201
                    )
                    guard let id = answer["pipelineId"] as? String else { throw ValidationError("no pipelineId in \(answer)") }
                    return (token, id)
                }
            }
            var all: [(String, String)] = []
            for try await item in group { all.append(item) }
            return all
        }
        let createdIn = ContinuousClock.now - started
        var peak = Memory.rss(pid)
        var done: [JSON] = []
        var pending = created
        let deadline = ContinuousClock.now + .seconds(self.timeout)
        while !pending.isEmpty {
            guard ContinuousClock.now < deadline else {
                throw ValidationError("\(pending.count) of \(count) pipelines did not complete within \(self.timeout) s")
            }
            var still: [(String, String)] = []
            for (token, id) in pending {
                let pipeline = try await self.call(http, .GET, "/v1/pipelines/\(id)", token: token, expect: 200)
                switch pipeline["status"] as? String {
                case "completed": done.append(pipeline)
                case "running": still.append((token, id))
                default: throw ValidationError("pipeline \(id) ended \(pipeline["status"] ?? "?"): \(pipeline["error"] ?? "")")
                }
            }
            pending = still
            peak = max(peak, Memory.rss(pid))
            if !pending.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
        }
        return (done, createdIn, ContinuousClock.now - started, peak)
    }

    /// Per stage: the orchestration overhead (the stage's time without its provider call, plus
    /// the gap since the previous stage finished or the pipeline was created) and the provider call.
    static func stageTimes(_ pipelines: [JSON]) -> (overheads: [Double], providers: [Double], within: [Double], gaps: [Double]) {
        var overheads: [Double] = []
        var providers: [Double] = []
        var within: [Double] = []
        var gaps: [Double] = []
        for pipeline in pipelines {
            var previous = Self.date(pipeline["createdAt"])
            for stage in (pipeline["stages"] as? [JSON] ?? []).sorted(by: { ($0["position"] as? Int ?? 0) < ($1["position"] as? Int ?? 0) }) {
                guard let start = Self.date(stage["startedAt"]), let end = Self.date(stage["finishedAt"]),
                    let provider = (stage["providerMs"] as? NSNumber)?.doubleValue
                else { continue }
                let gap = previous.map { start.timeIntervalSince($0) * 1000 } ?? 0
                overheads.append(end.timeIntervalSince(start) * 1000 - provider + max(0, gap))
                within.append(end.timeIntervalSince(start) * 1000 - provider)
                gaps.append(max(0, gap))
                providers.append(provider)
                previous = end
            }
        }
        return (overheads, providers, within, gaps)
    }

    private func call(_ http: HTTPClient, _ method: HTTPMethod, _ path: String, token: String, body: JSON? = nil, expect: Int) async throws -> JSON {
        var request = HTTPClientRequest(url: self.stack.url + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        var response = try await http.execute(request, timeout: .seconds(120))
        // A 429 (the tenant's planner calls in flight) is sent again after its Retry-After, as a client does.
        while response.status.code == 429 {
            let wait = Int(response.headers.first(name: "Retry-After") ?? "") ?? 1
            _ = try await response.body.collect(upTo: 1 << 20)
            try await Task.sleep(for: .seconds(wait))
            response = try await http.execute(request, timeout: .seconds(120))
        }
        let bytes = try await response.body.collect(upTo: 8 << 20)
        let object = (try? JSONSerialization.jsonObject(with: Data(buffer: bytes))) as? JSON ?? [:]
        guard Int(response.status.code) == expect else {
            throw ValidationError("\(method) \(path): \(response.status.code) \(String(buffer: bytes))")
        }
        return object
    }

    private static func date(_ value: Any?) -> Date? {
        (value as? String).flatMap { Date(rfc3339: $0) }
    }

    private static func seconds(_ duration: Duration) -> String {
        String(format: "%.1f s", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    private static func line(_ name: String, _ values: [Double]) -> String {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return "\(name): no samples" }
        let at = { (q: Double) in sorted[min(sorted.count - 1, Int((Double(sorted.count) * q).rounded(.up)) - 1)] }
        return "\(name): "
            + String(format: "p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms (n=%d)", at(0.5), at(0.9), at(0.99), sorted.last!, sorted.count)
    }
}

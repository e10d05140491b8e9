import ApprovalsContract
import ArgumentParser
import AsyncHTTPClient
import Foundation
import ServiceKit
import SwarmdeckTools
import Synchronization

/// `swarmdeck-bench gate`: decision → waiting agent released, on the running stack. Runs a
/// command under the agent connector that calls `swarmdeck approve hook` in a loop (each call
/// opens a gate and waits); for each gate the bench posts an approval and times until the hook
/// process has printed its answer and exited (the command then writes the call's number to a
/// FIFO the bench reads). Idle first, then while ingest takes `--load-rate` events/s of another
/// agent's telemetry, side by side.
struct GateBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gate",
        abstract: "Approval round trip: POST decision → the waiting hook has printed allow; idle, then under ingest load."
    )

    @Option(help: "Gates decided per phase.")
    var iterations = 100

    @Option(help: "Events/s ingest takes during the second phase (0: no second phase).")
    var loadRate = 5000.0

    @OptionGroup var stack: StackBenchOptions

    func run() async throws {
        let key = try self.stack.ingestKey()
        let signer = try await self.stack.signer()
        let agent = "gate-bench-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(agent)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("released").path
        guard mkfifo(fifo, 0o600) == 0 else { throw ValidationError("mkfifo \(fifo): \(String(cString: strerror(errno)))") }
        let hook = #"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"bench"},"tool_use_id":"\#(agent)-'"$i"'"}"#
        let script = """
            exec 3>'\(fifo)'; i=0
            while :; do i=$((i+1)); echo '\(hook)' | '\(self.stack.swarmdeck)' approve hook --deadline-seconds 120 >/dev/null 2>&1; echo "$i $?" >&3; done
            """
        let connector = Process()
        connector.executableURL = URL(fileURLWithPath: self.stack.swarmdeck)
        connector.arguments = [
            "agent", "run", "--url", self.stack.url, "--key", key, "--swarm", agent, "--name", agent, "--", "/bin/sh", "-c", script,
        ]
        connector.standardError = FileHandle.nullDevice
        connector.standardOutput = FileHandle.nullDevice
        try connector.run()
        defer { if connector.isRunning { kill(connector.processIdentifier, SIGKILL) } }

        let released = Released()
        // The FIFO's lines: "<call> <exit status>", stamped as they arrive.
        Thread.detachNewThread {
            guard let handle = FileHandle(forReadingAtPath: fifo) else { return }
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                let now = ContinuousClock.now
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    let parts = line.split(separator: " ")
                    if parts.count == 2, let call = Int(parts[0]) { released.record(call, status: Int(parts[1]) ?? -1, at: now) }
                }
            }
        }

        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        // A fresh deciding person per 100 decisions: under approvals.decisions-per-minute.
        let approvals: @Sendable (Int) async throws -> Client = { batch in
            let token = try await signer.sign(tenant: self.stack.tenant, subject: "gate-bench-\(batch)", scopes: [.approvalsDecide])
            return try Client.approvals(url: self.stack.url, credential: token, httpClient: http, timeout: .seconds(10))
        }
        print("gate-bench: \(self.iterations) gates per phase, agent \(agent), via \(self.stack.url)")
        let calls = BenchSequence()
        let idle = try await self.phase(approvals, swarm: agent, released: released, calls: calls, until: nil)
        var phases = [("idle", idle)]
        if self.loadRate > 0 {
            let (loaded, report) = try await IngestLoad.during(
                url: self.stack.url,
                key: key,
                rate: self.loadRate,
                seconds: Double(self.iterations) * 0.15 + 12
            ) { deadline in
                try await self.phase(approvals, swarm: agent, released: released, calls: calls, until: deadline)
            }
            phases.append((String(format: "ingest %.0f events/s", report.eventsPerSecond), loaded))
        }
        kill(connector.processIdentifier, SIGTERM)
        connector.waitUntilExit()
        try await http.shutdown()
        for (name, (accepted, releasedAt)) in phases {
            print(Self.line("\(name): POST → 200", accepted))
            print(Self.line("\(name): POST → hook printed", releasedAt))
        }
    }

    /// Decides the next `iterations` gates (or as many as fit before `until`).
    private func phase(
        _ approvals: @Sendable (Int) async throws -> Client,
        swarm: String,
        released: Released,
        calls: BenchSequence,
        until deadline: ContinuousClock.Instant?
    ) async throws -> ([Duration], [Duration]) {
        var accepted: [Duration] = []
        var latencies: [Duration] = []
        var client: Client?
        for _ in 0..<self.iterations {
            if let deadline, ContinuousClock.now > deadline { break }
            // The command numbers its hook calls from 1.
            let call = calls.next() + 1
            if client == nil || call % 100 == 0 { client = try await approvals(call / 100) }
            let approvals = client!
            let gate = try await self.pendingGate(approvals, swarm: swarm, key: "\(call)")
            let started = ContinuousClock.now
            switch try await approvals.decideApprovalGate(path: .init(gateId: gate), body: .json(.init(decision: .approve))) {
            case .ok: accepted.append(ContinuousClock.now - started)
            case .conflict: throw ValidationError("gate \(gate) was settled by someone else")
            case .default(let status, let error): throw ControlAPIClientError(status: status, error)
            }
            let (at, status) = try await released.wait(for: call, timeout: .seconds(10))
            guard status == 0 else { throw ValidationError("the hook of call \(call) exited \(status)") }
            latencies.append(at - started)
        }
        return (accepted, latencies)
    }

    /// The id of the pending gate of the bench's agent (its swarm is its own), once it is listed.
    private func pendingGate(_ approvals: Client, swarm: String, key suffix: String) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if case .ok(let answer) = try await approvals.listApprovalGates(query: .init(status: .pending, swarmId: swarm, limit: 10)),
                let gate = try answer.body.json.gates.first
            {
                return gate.gateId
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw ValidationError("gate \(suffix) never opened")
    }

    static func line(_ name: String, _ values: [Duration]) -> String {
        let sorted = values.sorted()
        func at(_ p: Double) -> String {
            sorted.atQuantile(p).map { String(format: "%.1f", $0.millisecondsDouble) } ?? "-"
        }
        return
            "\(name.padding(toLength: 52, withPad: " ", startingAt: 0)) n=\(values.count)  p50 \(at(0.5)) ms  p90 \(at(0.9)) ms  p99 \(at(0.99)) ms  max \(at(1)) ms"
    }
}

/// A count shared by a bench's phases: 0, 1, 2…
final class BenchSequence: Sendable {
    private let count = Mutex(0)

    func next() -> Int {
        self.count.withLock { count in
            defer { count += 1 }
            return count
        }
    }
}

/// When each hook call's answer was printed, and how it exited.
final class Released: Sendable {
    private let calls = Mutex<[Int: (ContinuousClock.Instant, Int)]>([:])

    func record(_ call: Int, status: Int, at instant: ContinuousClock.Instant) {
        self.calls.withLock { $0[call] = (instant, status) }
    }

    func wait(for call: Int, timeout: Duration) async throws -> (ContinuousClock.Instant, Int) {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let done = self.calls.withLock({ $0[call] }) { return done }
            try await Task.sleep(for: .microseconds(200))
        }
        throw ValidationError("the hook of call \(call) never answered")
    }
}

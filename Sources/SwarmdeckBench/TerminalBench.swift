import ArgumentParser
import AsyncHTTPClient
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import ServiceKit
import SwarmdeckTools
import Synchronization
import TerminalBroker

/// `swarmdeck-bench terminal`: terminal-broker's three targets on the running local stack (its
/// sshd on this machine is the broker's host `local`, and the bench makes its own tmux sessions
/// on the same tmux server, `tmux -L SOCKET`).
///
/// 1. Attach → first screen, as a phone sees it: a WebSocket opened, `screen` received, closed
///    (so each attach makes a new tmux control client).
/// 2. Keystroke → echo through the broker (input over the WebSocket, the echo as `output`) beside
///    plain OpenSSH and tmux (a control-mode client over `ssh`, `send-keys`, the echo as
///    `%output`), alternated in one run: the difference is what the broker adds.
/// 3. A busy session: the lines a producer writes in a fixed time with no viewer, with one and
///    with many viewers, and the broker's resident memory per viewer.
struct TerminalBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "terminal",
        abstract: "terminal-broker: attach → first screen, keystroke echo vs plain ssh + tmux, many viewers of a busy session."
    )

    @OptionGroup var stack: StackBenchOptions

    @Option(help: "The broker's host that is this machine's sshd (the local stack registers it as local).")
    var host = "local"

    @Option(help: "That sshd's port, for the plain ssh baseline.")
    var sshPort = 2222

    @Option(help: "The broker's SSH key file: the baseline logs in with the tenant's key derived from it, which that sshd authorizes.")
    var brokerKey = ".swarmdeck/keys/terminal-ssh"

    @Option(help: "The tmux server (tmux -L) the host's sessions are on.")
    var tmuxSocket = "swarmdeck-demo"

    @Option(help: "terminal-broker's pid file, for its resident memory.")
    var brokerPidFile = ".swarmdeck/run/terminal-broker.pid"

    @Option(help: "Attaches measured.")
    var attaches = 100

    @Option(help: "Keystrokes measured (each way).")
    var keystrokes = 300

    @Option(help: "Viewers of the busy session.")
    var viewers = 100

    @Option(help: "Seconds the busy session's producer writes for, per phase.")
    var seconds = 10

    func run() async throws {
        let signer = try await self.stack.signer()
        let token = try await signer.sign(
            tenant: self.stack.tenant,
            subject: "terminal-bench",
            scopes: [.terminalAttach, .terminalWrite],
            lifetime: .seconds(3600)
        )
        let suffix = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let names = (attach: "bench-attach-\(suffix)", echo: "bench-echo-\(suffix)", plain: "bench-plain-\(suffix)", busy: "bench-busy-\(suffix)")
        defer { for name in [names.attach, names.echo, names.plain, names.busy] { try? self.tmux(["kill-session", "-t", "=" + name]) } }
        try self.tmux(["new-session", "-d", "-s", names.attach, "-x", "120", "-y", "40", "bash --norc --noprofile"])
        try self.tmux(["new-session", "-d", "-s", names.echo, "-x", "120", "-y", "40", "cat"])
        try self.tmux(["new-session", "-d", "-s", names.plain, "-x", "120", "-y", "40", "cat"])
        try self.tmux(["new-session", "-d", "-s", names.busy, "-x", "120", "-y", "40", "cat"])
        let ids = try await self.sessionIDs(token: token)
        func id(_ name: String) throws -> String {
            guard let id = ids[name] else { throw ValidationError("the broker does not list \(name): is host \(self.host) this machine's sshd?") }
            return id
        }
        print("terminal-bench: broker at \(self.stack.url), host \(self.host), tmux -L \(self.tmuxSocket)")

        let (attach, reused) = try await self.attachLatency(try id(names.attach), token: token)
        print(
            String(
                format:
                    "attach → first screen (%d attaches, %d of them joined an attachment still open): p50 %.1f ms, p99 %.1f ms, max %.1f ms (target p99 < 300 ms)",
                attach.count,
                reused,
                attach.p(0.5),
                attach.p(0.99),
                attach.p(1)
            )
        )

        let echoID = try id(names.echo)
        let (broker, plain) = try await withDeadline(.seconds(Double(self.keystrokes) + 60), orThrow: ValidationError("the keystrokes took too long"))
        {
            try await self.echo(echoID, plainSession: names.plain, token: token)
        }
        print(
            String(
                format: "keystroke → echo (%d each way, alternated), through the broker: p50 %.2f ms, p99 %.2f ms",
                broker.count,
                broker.p(0.5),
                broker.p(0.99)
            )
        )
        print(String(format: "keystroke → echo, plain ssh + tmux control mode: p50 %.2f ms, p99 %.2f ms", plain.p(0.5), plain.p(0.99)))
        print(String(format: "added by the broker at p50: %.2f ms (target < 5 ms)", broker.p(0.5) - plain.p(0.5)))

        try await self.busy(names.busy, id: try id(names.busy), token: token)
    }

    // MARK: Attach

    /// Each attach: its time to the first screen, and whether its hello named the attachment
    /// the one before used (the broker had not detached yet).
    private func attachLatency(_ id: String, token: String) async throws -> (samples: [Double], reused: Int) {
        var samples: [Double] = []
        var previous: String?
        var reused = 0
        for _ in 0..<self.attaches {
            let attachment = Box<String?>(nil)
            let started = ContinuousClock.now
            try await withDeadline(.seconds(15), orThrow: ValidationError("no first screen within 15 s")) {
                try await self.watch(id, token: token) { frame in
                    if let named = frame.attachment { attachment.value.withLock { $0 = named } }
                    return frame.isScreen ? .stop : .more
                }
            }
            samples.append((ContinuousClock.now - started).millisecondsDouble)
            let current = attachment.value.withLock { $0 }
            if current != nil && current == previous { reused += 1 }
            previous = current
            // The attachment ends with its last viewer: the next attach makes a new one.
            try await Task.sleep(for: .milliseconds(100))
        }
        return (samples.sorted(), reused)
    }

    // MARK: Echo

    private func echo(_ id: String, plainSession: String, token: String) async throws -> (broker: [Double], plain: [Double]) {
        // The tenant's key, as the broker derives it, in a file of this run's own.
        let keys = try TenantSSHKeys(brokerKeyText: try String(contentsOfFile: self.brokerKey, encoding: .utf8))
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("terminal-bench-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: keyFile.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw ValidationError("cannot create \(keyFile.path)")
        }
        defer { try? FileManager.default.removeItem(at: keyFile) }
        try Data(keys.privateKeyText(tenant: self.stack.tenant).utf8).write(to: keyFile)
        let plain = try PlainControlClient(
            arguments: [
                "ssh", "-q", "-F", "/dev/null", "-i", keyFile.path, "-p", String(self.sshPort), "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "127.0.0.1",
                "tmux -u -L \(self.tmuxSocket) -C attach-session -f ignore-size -t =\(plainSession)",
            ]
        )
        defer { Task { await plain.stop() } }
        try await plain.waitFor { $0.hasPrefix("%end") || $0.hasPrefix("%session-changed") }
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        let samples = Box<(broker: [Double], plain: [Double])>(([], []))
        let keystrokes = self.keystrokes
        try await self.session(id, token: token, input: true) { send, next in
            _ = try await next { $0.isScreen }
            for n in 0..<keystrokes {
                let letter = String(letters[n % letters.count])
                // Through the broker: input over the WebSocket, the echo as output.
                var started = ContinuousClock.now
                try await send(#"{"type":"input","data":"\#(letter)"}"#)
                _ = try await next { $0.isOutput && ($0.data ?? "").contains(letter) }
                let broker = (ContinuousClock.now - started).millisecondsDouble
                // Plain: send-keys on a control client over ssh, the echo as %output.
                started = ContinuousClock.now
                try await plain.send("send-keys -t =\(plainSession): -l \(letter)")
                try await plain.waitFor { $0.hasPrefix("%output") && $0.hasSuffix(letter) }
                let direct = (ContinuousClock.now - started).millisecondsDouble
                samples.value.withLock {
                    $0.broker.append(broker)
                    $0.plain.append(direct)
                }
            }
        }
        return samples.value.withLock { ($0.broker.sorted(), $0.plain.sorted()) }
    }

    // MARK: Many viewers

    private func busy(_ name: String, id: String, token: String) async throws {
        let counts = FileManager.default.temporaryDirectory.appendingPathComponent("terminal-bench-\(UUID().uuidString)").path
        var phases: [String] = []
        defer { for phase in phases { try? FileManager.default.removeItem(atPath: counts + "-" + phase) } }
        // The producer: as many lines as it can in `seconds`, then its count in a file.
        func produce(_ phase: String) async throws -> Int {
            phases.append(phase)
            let file = counts + "-" + phase
            let script =
                "end=$((SECONDS+\(self.seconds))); n=0; while ((SECONDS<end)); do echo \"line $n of the busy agent\"; n=$((n+1)); done; echo $n > \(file)"
            try self.tmux(["respawn-pane", "-k", "-t", "=\(name):", "bash --norc --noprofile -c '\(script)'; exec cat"])
            let deadline = ContinuousClock.now + .seconds(self.seconds + 30)
            while ContinuousClock.now < deadline {
                if let text = try? String(contentsOfFile: file, encoding: .utf8), let n = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                    return n
                }
                try await Task.sleep(for: .milliseconds(200))
            }
            throw ValidationError("the producer did not finish")
        }
        let broker =
            Int32((try? String(contentsOfFile: self.brokerPidFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        let alone = try await produce("alone")
        var results: [String] = []
        for count in [1, self.viewers] {
            let rssBefore = Memory.rss(broker)
            let fleet = ViewerFleet(count)
            let tasks = fleet.tallies.map { tally in
                Task {
                    try? await self.watch(id, token: token) { frame in
                        tally.saw(frame)
                        return .more
                    }
                }
            }
            guard await fleet.waitForScreens(timeout: .seconds(60)) else { throw ValidationError("not every viewer got its first screen in 60 s") }
            let rssWith = Memory.rss(broker)
            let lines = try await produce("viewers-\(count)")
            for task in tasks { task.cancel() }
            let perViewer = Double(rssWith - rssBefore) / 1024 / Double(count)
            results.append(
                String(
                    format: "  %3d viewers: %d lines in %d s (%.2f× alone); broker resident %+.1f MiB, %.1f KiB per viewer; "
                        + "%d of them got output, %d were sent a fresh screen after falling behind",
                    count,
                    lines,
                    self.seconds,
                    Double(lines) / Double(max(alone, 1)),
                    Double(rssWith - rssBefore) / 1_048_576,
                    perViewer,
                    fleet.withOutput,
                    fleet.rescreened
                )
            )
            try await Task.sleep(for: .seconds(2))
        }
        print(
            "busy session: the producer alone wrote \(alone) lines in \(self.seconds) s"
                + (broker == 0 ? " (no broker pid: memory not measured)" : "")
        )
        for line in results { print(line) }
    }

    // MARK: Plumbing

    /// Session name → session id on the bench's host, as the broker lists them.
    private func sessionIDs(token: String) async throws -> [String: String] {
        let sessions = try await self.get("/v1/terminal/sessions", token: token) as? [[String: Any]] ?? []
        let hosts = (try await self.get("/v1/terminal/hosts", token: token) as? [String: Any])?["hosts"] as? [[String: Any]] ?? []
        let hostIDs = hosts.filter { $0["name"] as? String == self.host }.compactMap { $0["hostId"] as? String }
        var ids: [String: String] = [:]
        for session in sessions where hostIDs.contains(session["hostId"] as? String ?? "") {
            if let name = session["tmuxSessionName"] as? String, let id = session["sessionId"] as? String { ids[name] = id }
        }
        return ids
    }

    /// The JSON answer of a GET on the stack.
    private func get(_ path: String, token: String) async throws -> Any {
        try JSONSerialization.jsonObject(with: Data(buffer: try await HTTPClient.shared.getOK(self.stack.url + path, token: token)))
    }

    /// `tmux -L SOCKET ARGS`.
    private func tmux(_ arguments: [String]) throws {
        let result = try Spawn.result("/usr/bin/tmux", ["-L", self.tmuxSocket] + arguments)
        guard result.status == 0 else { throw ValidationError("tmux \(arguments.joined(separator: " ")) failed: \(result.errors)") }
    }

    enum Verdict { case more, stop }

    /// The WebSocket client's logger: errors only.
    private static let quiet: Logger = {
        var logger = Logger(label: "terminal-bench")
        logger.logLevel = .error
        return logger
    }()

    private func url(_ id: String, input: Bool) -> String {
        let base = self.stack.url.replacingOccurrences(of: "http://", with: "ws://").replacingOccurrences(of: "https://", with: "wss://")
        return base + "/v1/terminal/sessions/\(id)/attach?protocol=1" + (input ? "&input=true" : "")
    }

    /// A viewer: each frame to `onFrame` until it says stop (then the bench closes) or the
    /// server closes.
    private func watch(_ id: String, token: String, onFrame: @escaping @Sendable (TerminalFrame) -> Verdict) async throws {
        try await WebSocketClient.connect(
            url: self.url(id, input: false),
            configuration: .bearer(token, maxFrameSize: 1 << 24),
            logger: Self.quiet
        ) {
            inbound,
            outbound,
            _ in
            for try await message in inbound.messages(maxSize: 1 << 24) {
                guard case .text(let text) = message else { continue }
                if onFrame(TerminalFrame(text)) == .stop { break }
            }
            try await outbound.close(.normalClosure, reason: nil)
        }
    }

    /// A conversation: `body` sends text messages and waits for the next frame a predicate
    /// accepts, while the frames are read as they come.
    private func session(
        _ id: String,
        token: String,
        input: Bool,
        body:
            @escaping @Sendable (
                _ send: @Sendable (String) async throws -> Void, _ next: (@Sendable (TerminalFrame) -> Bool) async throws -> TerminalFrame
            ) async throws -> Void
    ) async throws {
        try await WebSocketClient.connect(
            url: self.url(id, input: input),
            configuration: .bearer(token, maxFrameSize: 1 << 24),
            logger: Self.quiet
        ) {
            inbound,
            outbound,
            _ in
            let (frames, continuation) = AsyncStream.makeStream(of: TerminalFrame.self)
            let driver = Task {
                var iterator = frames.makeAsyncIterator()
                func next(_ wanted: @Sendable (TerminalFrame) -> Bool) async throws -> TerminalFrame {
                    while let frame = await iterator.next() {
                        if frame.isEnd { throw ValidationError("the broker ended the attach: \(frame.text)") }
                        if wanted(frame) { return frame }
                    }
                    throw ValidationError("the attach closed")
                }
                do {
                    try await body({ try await outbound.write(.text($0)) }, next)
                } catch {
                    try? await outbound.close(.normalClosure, reason: nil)
                    throw error
                }
                try await outbound.close(.normalClosure, reason: nil)
            }
            for try await message in inbound.messages(maxSize: 1 << 24) {
                guard case .text(let text) = message else { continue }
                continuation.yield(TerminalFrame(text))
            }
            continuation.finish()
            try await driver.value
        }
    }
}

/// A message of the attach protocol, looked at as cheaply as a hundred viewers need.
struct TerminalFrame: Sendable {
    let text: String

    init(_ text: String) { self.text = text }

    /// An output's or a screen's text (decoded, so a letter is not found in the keys).
    var data: String? {
        (try? JSONSerialization.jsonObject(with: Data(self.text.utf8)) as? [String: Any])?["data"] as? String
    }

    /// The attachment a hello names.
    var attachment: String? {
        guard self.text.contains(#""type":"hello""#) else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(self.text.utf8)) as? [String: Any])?["attachment"] as? String
    }

    var isScreen: Bool { self.text.contains(#""type":"screen""#) }
    var isOutput: Bool { self.text.contains(#""type":"output""#) }
    var isEnd: Bool { self.text.contains(#""type":"end""#) }
}

/// What the many viewers of the busy session saw, each its own tally.
final class ViewerFleet: Sendable {
    /// One viewer's screens and outputs.
    final class Tally: Sendable {
        let counts = Mutex((screens: 0, outputs: 0))

        func saw(_ frame: TerminalFrame) {
            self.counts.withLock { counts in
                if frame.isScreen { counts.screens += 1 }
                if frame.isOutput { counts.outputs += 1 }
            }
        }
    }

    let tallies: [Tally]

    init(_ count: Int) {
        self.tallies = (0..<count).map { _ in Tally() }
    }

    /// Viewers that got output.
    var withOutput: Int { self.tallies.count { $0.counts.withLock { $0.outputs > 0 } } }
    /// Viewers sent a fresh screen after the first (they fell behind).
    var rescreened: Int { self.tallies.count { $0.counts.withLock { $0.screens > 1 } } }

    /// Waits until every viewer has its first screen.
    func waitForScreens(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if self.tallies.allSatisfy({ $0.counts.withLock { $0.screens > 0 } }) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}

/// A tmux control-mode client over OpenSSH's `ssh`: commands in, notification lines out.
actor PlainControlClient {
    private let process: Process
    private let input: FileHandle
    private let lines: AsyncStream<String>

    init(arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        let (lines, continuation) = AsyncStream.makeStream(of: String.self)
        let pending = Mutex([UInt8]())
        stdout.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                continuation.finish()
                return
            }
            let complete: [String] = pending.withLock { pending in
                pending.append(contentsOf: data)
                var found: [String] = []
                while let newline = pending.firstIndex(of: 0x0A) {
                    found.append(String(decoding: pending[..<newline], as: UTF8.self))
                    pending.removeSubrange(...newline)
                }
                return found
            }
            for line in complete { continuation.yield(line) }
        }
        try process.run()
        self.process = process
        self.input = stdin.fileHandleForWriting
        self.lines = lines
    }

    func send(_ command: String) throws {
        try self.input.write(contentsOf: Data((command + "\n").utf8))
    }

    /// Waits for a line `predicate` accepts (the caller bounds the wait).
    func waitFor(_ predicate: @Sendable (String) -> Bool) async throws {
        // One waiter at a time: each wait iterates the one stream from where the last stopped.
        for await line in self.lines where predicate(line) { return }
        throw ValidationError("ssh + tmux ended")
    }

    func stop() {
        try? self.input.close()
        self.process.terminate()
    }
}

extension Array where Element == Double {
    /// The value at quantile `q` of an ascending array (0 when empty).
    fileprivate func p(_ q: Double) -> Double { self.atQuantile(q) ?? 0 }
}

/// A value shared by the closures of one measurement.
final class Box<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}

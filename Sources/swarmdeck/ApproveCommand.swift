import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `swarmdeck approve hook`: makes a real agent wait for a person's decision on the phone.
struct ApproveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve",
        abstract: "Ask a person (on the phone) before an agent runs a tool.",
        subcommands: [Hook.self, MCPServer.self]
    )

    struct Hook: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A Claude Code (or Codex) PreToolUse command hook that waits for a person's decision.",
            discussion: """
                Reads the hook's JSON on stdin, opens an approval gate through the connector that runs the agent \
                (swarmdeck agent run: it sets SWARMDECK_GATE_SOCKET), waits, and prints the hook's answer: \
                permissionDecision allow or deny, never ask. It fails closed: on any error, and at its own deadline, \
                it exits 2 with the reason on stderr, which blocks the tool. Set the hook's timeout above \
                --deadline-seconds. See docs/approvals.md for the settings.
                """
        )

        @Option(
            help:
                "Tools that need a person, comma-separated (default: every tool the hook's matcher sends). Others get no answer: Claude Code's own rules apply."
        )
        var tools: String?

        @Option(
            help:
                "Seconds to wait for a decision; keep it far below the hook's timeout (give that a day: Claude Code's timer runs on while the agent is paused). The gate expires then too."
        )
        var deadlineSeconds = 590

        @Option(help: "The gate's risk shown on the phone: low, medium, high or critical.")
        var risk = "medium"

        /// Runs the hook from the command line; every way it can fail exits 2 (a bad option
        /// included: ArgumentParser's own exit codes would let the tool run).
        static func mainFailingClosed(_ arguments: [String]) async -> Never {
            do {
                let hook = try Self.parse(arguments)
                try await hook.run()
                Glibc.exit(0)
            } catch let code as ExitCode {
                Glibc.exit(code.rawValue)
            } catch {
                if Self.exitCode(for: error) == .success {
                    print(Self.fullMessage(for: error))  // --help
                    Glibc.exit(0)
                }
                try? FileHandle.standardError.write(contentsOf: Data("swarmdeck approve hook: denied: \(Self.message(for: error))\n".utf8))
                Glibc.exit(2)
            }
        }

        func run() async throws {
            // A write to a connector that went away must fail, not kill the hook by signal.
            signal(SIGPIPE, SIG_IGN)
            do {
                guard (5...86_400).contains(self.deadlineSeconds) else { throw HookFailure("--deadline-seconds must be 5…86400") }
                guard ["low", "medium", "high", "critical"].contains(self.risk) else {
                    throw HookFailure("--risk must be low, medium, high or critical")
                }
                guard let input = try FileHandle.standardInput.read(upToCount: Self.maxInput),
                    let hook = try? JSONSerialization.jsonObject(with: input) as? [String: Any]
                else { throw HookFailure("stdin is not the hook's JSON object") }
                let tool = hook["tool_name"] as? String ?? "unknown tool"
                if let tools = self.tools, !tools.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }).contains(tool) {
                    return  // not ours to decide
                }
                let (allow, reason) = try PermissionAsk.ask(
                    tool: tool,
                    input: hook["tool_input"] as? [String: Any] ?? [:],
                    toolUseID: hook["tool_use_id"] as? String,
                    risk: self.risk,
                    deadlineSeconds: self.deadlineSeconds,
                    source: "hook"
                )
                let answer: [String: Any] = [
                    "hookSpecificOutput": [
                        "hookEventName": "PreToolUse",
                        "permissionDecision": allow ? "allow" : "deny",
                        "permissionDecisionReason": reason,
                    ]
                ]
                // A closed stdout is an error (EPIPE: SIGPIPE is ignored), which denies.
                try FileHandle.standardOutput.write(
                    contentsOf: try JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys]) + Data("\n".utf8)
                )
            } catch {
                // Exit 2 blocks the tool; any other failure would let it run (notes/approvals.md).
                try? FileHandle.standardError.write(contentsOf: Data("swarmdeck approve hook: denied: \(error)\n".utf8))
                throw ExitCode(2)
            }
        }

        /// The most of the hook's JSON read from stdin (more: denied).
        static let maxInput = 4 << 20
    }
}

/// What `approve hook` and `approve mcp` share: one tool call put to a person through the
/// connector's gate socket.
enum PermissionAsk {
    /// The most of the tool's input sent to approvals (it keeps 16 KiB after redaction).
    static let maxSentInput = 64 << 10

    /// Opens the gate for one tool call and waits up to `deadlineSeconds` (the gate expires 5 s
    /// before, so that nobody deciding is a deny). Returns whether a person approved it (only
    /// then: an expiry never allows, whatever approvals tells agents) and the reason to show.
    /// - Throws: on anything else (no connector, approvals unreachable, the deadline): the
    ///   caller denies.
    static func ask(
        tool: String,
        input: [String: Any],
        toolUseID: String?,
        risk: String,
        deadlineSeconds: Int,
        source: String
    ) throws -> (
        allow: Bool, reason: String
    ) {
        guard let socket = ProcessInfo.processInfo.environment["SWARMDECK_GATE_SOCKET"], !socket.isEmpty else {
            throw HookFailure("SWARMDECK_GATE_SOCKET is not set: run the agent under `swarmdeck agent run`")
        }
        var inputJSON = String(decoding: try JSONSerialization.data(withJSONObject: input, options: [.sortedKeys]), as: UTF8.self)
        if inputJSON.utf8.count > Self.maxSentInput {
            // A large Write is shown by its start.
            let start = String(decoding: inputJSON.utf8.prefix(Self.maxSentInput), as: UTF8.self).filter { $0 != "\u{FFFD}" }
            inputJSON = String(decoding: try JSONSerialization.data(withJSONObject: ["truncated": start]), as: UTF8.self)
        }
        let request = GateRelayRequest(
            idempotencyKey: Self.idempotencyKey(toolUseID),
            summary: Self.summary(tool: tool, input: input),
            risk: risk,
            tool: String(String.UnicodeScalarView(tool.unicodeScalars.prefix(200))),
            toolInput: inputJSON,
            expiresInSeconds: max(1, deadlineSeconds - 5),
            source: source
        )
        let reply = try GateSocket.ask(path: socket, request, deadline: .now() + .seconds(deadlineSeconds))
        if let error = reply.error { throw HookFailure(error) }
        guard let granted = reply.allow, let status = reply.status else { throw HookFailure("the connector answered no decision") }
        let allow = granted && status == "approved"
        let who = reply.decidedBy.map { " by \($0)" } ?? ""
        let reason = allow ? "approved\(who)" + (reply.reason.map { ": \($0)" } ?? "") : "\(status)\(who): \(reply.reason ?? "no reason given")"
        return (allow, reason)
    }

    /// The call's `tool_use_id` (unique per tool call; a repeat finds its gate), or a random key
    /// when there is none: a call is never answered by another call's decision.
    static func idempotencyKey(_ toolUseID: String?) -> String {
        if let toolUseID, (1...128).contains(toolUseID.utf8.count),
            toolUseID.utf8.allSatisfy({ $0 < 0x80 && (isalnum(Int32($0)) != 0 || $0 == 0x2E || $0 == 0x5F || $0 == 0x3A || $0 == 0x2D) })
        {
            return toolUseID
        }
        return "call-" + UUID().uuidString
    }

    /// What the phone shows: the tool and the heart of its input (approvals redacts
    /// credentials in it), at most 480 characters.
    static func summary(tool: String, input: [String: Any]) -> String {
        let detail = (input["command"] ?? input["file_path"] ?? input["url"] ?? input["pattern"]) as? String
        let line = detail.map { "\(tool): \($0)" } ?? tool
        return String(String.UnicodeScalarView(line.unicodeScalars.prefix(480)))
    }
}

/// A reason the hook denies.
struct HookFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The command's side of the gate socket: one request, one answer, a deadline.
enum GateSocket {
    static func ask(path: String, _ request: GateRelayRequest, deadline: DispatchTime) throws -> GateRelayReply {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HookFailure("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw HookFailure("socket path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw HookFailure("cannot reach the connector at \(path): \(String(cString: strerror(errno)))") }
        // A connector that stops reading cannot hold the hook past its deadline.
        var sendTimeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
        var line = try JSONEncoder().encode(request)
        line.append(UInt8(ascii: "\n"))
        let written = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == line.count else { throw HookFailure("cannot write to the connector: \(String(cString: strerror(errno)))") }
        var answer = Data()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !answer.contains(UInt8(ascii: "\n")) {
            let now = DispatchTime.now()
            guard now < deadline else { throw HookFailure("no decision before the hook's deadline") }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let wait = Int32(min(Double(Int32.max), Double(deadline.uptimeNanoseconds - now.uptimeNanoseconds) / 1e6))
            let ready = poll(&poller, 1, max(1, wait))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            let count = read(fd, &chunk, chunk.count)
            guard count > 0 else { throw HookFailure("the connector closed the socket without an answer") }
            answer.append(contentsOf: chunk[..<count])
            guard answer.count < 1 << 20 else { throw HookFailure("the connector's answer is too long") }
        }
        return try JSONDecoder().decode(GateRelayReply.self, from: answer.prefix(while: { $0 != UInt8(ascii: "\n") }))
    }
}

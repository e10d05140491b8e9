import CProcessControl
import Contracts
import Foundation
import SwarmdeckTools

#if canImport(Glibc)
import Glibc
#endif

/// `swarmdeck agent run --tmux NAME`: the connector runs inside a new detached tmux session
/// NAME, giving its command the pane's terminal (`--terminal`), so terminal-broker can show it
/// on a phone. The session is marked with the agent and swarm (``TmuxNames/agentOption``,
/// ``TmuxNames/swarmOption``), which is how the broker maps it to the agent.
///
/// The ingest key never enters tmux (not its command line, not the server's or the session's
/// environment, which anything in the session could read back). This process (the launcher)
/// hands the key, with the environment the command is to have, to the connector in the pane
/// over a UNIX socket in a private directory, and only to the pane's own process (its peer
/// credentials are checked against `#{pane_pid}`): another process of the same user that
/// connects first gets nothing. The connection stays open: the connector writes its exit
/// status on it before it exits. The launcher waits for that; a SIGTERM, SIGINT or SIGHUP to it
/// ends the session first (the connector stops its command as on any stop). It exits with the
/// connector's status, printing the pane's last lines if that failed.
struct TmuxLauncher {
    let session: String
    let socket: String?
    let agent: String
    let swarm: String
    let key: String
    /// The connector's options after `swarmdeck` (`agent run …`, without the key).
    let connectorOptions: [String]
    /// The command, after the options and `--`.
    let command: [String]
    /// The connector's grace period (`--grace-seconds`): how long a stop may take.
    let grace: Duration

    /// What the connector in the pane gets over the socket.
    struct Handover: Codable {
        var key: String
        /// The launcher's environment without the key (what the command is to have).
        var environment: [String]
    }

    private static let tmux = "/usr/bin/tmux"

    /// Starts the session, hands over the key, waits until the session is gone; returns the
    /// connector's exit status.
    func run() throws -> Int32 {
        guard access(Self.tmux, X_OK) == 0 || ChildProcess.resolve("tmux") != nil else {
            throw ChildProcessError("--tmux needs tmux installed")
        }
        // Stops are honoured from here on (a stop during the handover ends the session too).
        let stop = DispatchSemaphore(value: 0)
        let sources = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        defer { for source in sources { source.cancel() } }

        if try self.tmux(["has-session", "-t", "=" + self.session]).status == 0 {
            throw ChildProcessError("a tmux session \(self.session) exists already\(self.socket.map { " on socket \($0)" } ?? "")")
        }
        // A server started from a shell that had sourced local.env holds the key in its global
        // environment, which every session inherits and can read back.
        let global = try self.tmux(["show-environment", "-g"])
        if global.status == 0, global.output.contains(self.key) || global.output.contains("SWARMDECK_INGEST_KEY=") {
            throw ChildProcessError(
                "the tmux server's global environment holds the ingest key (it was started from a shell that had it): "
                    + "tmux\(self.socket.map { " -L \($0)" } ?? "") set-environment -g -u SWARMDECK_INGEST_KEY, or use another --tmux-socket"
            )
        }

        let handover = try HandoverSocket()
        defer { handover.remove() }
        var connection: Int32 = -1
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let started = try self.tmux(
            ["new-session", "-d", "-s", self.session, "-x", "200", "-y", "50", executable] + self.connectorOptions + [
                "--key-socket", handover.path, "--",
            ] + self.command
        )
        guard started.status == 0 else { throw ChildProcessError("tmux new-session failed: \(started.errors)") }
        do {
            for (option, value) in [("remain-on-exit", "on"), (TmuxNames.agentOption, self.agent), (TmuxNames.swarmOption, self.swarm)] {
                let set = try self.tmux(["set-option", "-t", "=" + self.session + ":", option, value])
                guard set.status == 0 else { throw ChildProcessError("tmux set-option \(option) failed: \(set.errors)") }
            }
            guard let pane = try self.panePID() else { throw ChildProcessError("the tmux session \(self.session) ended at once") }
            let environment = ChildProcess.environment(hiding: ["SWARMDECK_INGEST_KEY"], secrets: [self.key])
            connection = try handover.give(Handover(key: self.key, environment: environment), to: pane, within: .seconds(15)) {
                stop.wait(timeout: .now()) == .success || (try? self.panePID()) == nil
            }
            handover.remove()
        } catch {
            self.report(failure: "\(error)")
            _ = try? self.tmux(["kill-session", "-t", "=" + self.session])
            throw error
        }
        AgentConnector.say(
            "\(self.agent) runs in tmux session \(self.session): tmux\(self.socket.map { " -L \($0)" } ?? "") attach -t \(self.session)"
        )
        defer { close(connection) }
        var stopping: ContinuousClock.Instant?
        while true {
            if stopping == nil, stop.wait(timeout: .now()) == .success {
                // The session ends with its pane; the connector then stops its command and
                // reports its end, which may take its grace period.
                _ = try? self.tmux(["kill-session", "-t", "=" + self.session])
                stopping = .now
            }
            if let since = stopping, ContinuousClock.now - since > self.grace + .seconds(10) { break }
            switch HandoverSocket.status(on: connection, waiting: .seconds(1)) {
            case .waiting:
                continue
            case .exited(let status):
                if status != 0 && stopping == nil { self.report(failure: "the connector exited with status \(status)") }
                _ = try? self.tmux(["kill-session", "-t", "=" + self.session])
                AgentConnector.say("\(self.agent): tmux session \(self.session) ended")
                return stopping == nil ? status : 143
            case .gone:
                // Ended without a word: killed, or it crashed.
                if stopping == nil { self.report(failure: "the connector ended without reporting its status") }
                _ = try? self.tmux(["kill-session", "-t", "=" + self.session])
                return stopping == nil ? 1 : 143
            }
        }
        AgentConnector.say("\(self.agent): stopped; the connector did not report its end in time")
        return 143
    }

    /// Says `failure` with the pane's last lines (what the connector said before it ended).
    private func report(failure: String) {
        let lines = (try? self.tmux(["capture-pane", "-p", "-S", "-20", "-t", "=" + self.session + ":"]))?.output ?? ""
        AgentConnector.say("\(self.agent): \(failure); the pane's last lines:\n\(lines.trimmingCharacters(in: .whitespacesAndNewlines))")
    }

    /// The pane's process (the connector), or nil when the session is gone.
    private func panePID() throws -> pid_t? {
        let answer = try self.tmux(["display-message", "-p", "-t", "=" + self.session + ":", "#{pane_pid}"])
        return answer.status == 0 ? pid_t(answer.output.trimmingCharacters(in: .whitespacesAndNewlines)) : nil
    }

    /// `tmux [-L socket] ARGS`, run with an environment that holds no key.
    private func tmux(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let environment = ChildProcess.environment(hiding: ["SWARMDECK_INGEST_KEY"], secrets: [self.key])
        let path = access(Self.tmux, X_OK) == 0 ? Self.tmux : (ChildProcess.resolve("tmux") ?? Self.tmux)
        let result = try Spawn.result(path, (self.socket.map { ["-L", $0] } ?? []) + arguments, environment: .exactly(environment))
        return (result.status, result.output, result.errors.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// The launcher's end of the handover: a listening UNIX socket in a private directory.
final class HandoverSocket {
    let directory: String
    let path: String
    private let fd: Int32
    private var removed = false

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/swarmdeck-handover-XXXXXX").utf8CString)
        guard let directory = mkdtemp(&template).map({ String(cString: $0) }) else {
            throw ChildProcessError("a private directory for the handover: \(String(cString: strerror(errno)))")
        }
        self.directory = directory
        self.path = directory + "/connector.sock"
        self.fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard self.fd >= 0, Self.withAddress(self.path, { bind(self.fd, $0, $1) }) == 0, listen(self.fd, 8) == 0 else {
            let reason = String(cString: strerror(errno))
            if self.fd >= 0 { close(self.fd) }
            rmdir(directory)
            throw ChildProcessError("the handover socket: \(reason)")
        }
        chmod(self.path, 0o600)
    }

    /// Sends `handover` to the first connection whose peer is process `pid` of this user;
    /// other connections are closed unanswered. Gives up at the deadline or when `abandon` says so.
    /// - Returns: The connection, kept open: the connector reports its exit status on it.
    func give(_ handover: TmuxLauncher.Handover, to pid: pid_t, within timeout: Duration, abandon: () -> Bool) throws -> Int32 {
        let payload = try JSONEncoder().encode(handover) + Data("\n".utf8)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if abandon() { throw ChildProcessError("stopped, or the connector ended, before it took its key") }
            var poller = pollfd(fd: self.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) > 0 else { continue }
            let connection = accept(self.fd, nil, nil)
            guard connection >= 0 else { continue }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            var peer: Int32 = 0
            var uid: UInt32 = 0
            guard swarmdeck_peer(connection, &peer, &uid) == 0, peer == pid, uid == geteuid() else {
                close(connection)
                AgentConnector.say("warning: process \(peer) (uid \(uid)) asked for the connector's key and was refused")
                continue
            }
            let written = payload.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            guard written == payload.count else {
                close(connection)
                throw ChildProcessError("handing the key over: \(String(cString: strerror(errno)))")
            }
            return connection
        }
        throw ChildProcessError("the connector in the tmux session did not take its key within \(timeout)")
    }

    /// Closes and removes the socket and its directory (once; later calls do nothing).
    func remove() {
        guard !self.removed else { return }
        self.removed = true
        close(self.fd)
        unlink(self.path)
        rmdir(self.directory)
    }

    /// What the connector in the pane (`--key-socket PATH`) receives, and the connection on
    /// which it reports its exit status (``report(status:on:)``).
    static func receive(from path: String) throws -> (handover: TmuxLauncher.Handover, connection: Int32) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ChildProcessError("--key-socket: \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard Self.withAddress(path, { connect(fd, $0, $1) }) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw ChildProcessError("--key-socket \(path): \(reason)")
        }
        var data = [UInt8]()
        var byte: UInt8 = 0
        while data.count < 4 << 20 {
            let count = read(fd, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count > 0, byte != 0x0A else { break }
            data.append(byte)
        }
        guard let handover = try? JSONDecoder().decode(TmuxLauncher.Handover.self, from: Data(data)), !handover.key.isEmpty else {
            close(fd)
            throw ChildProcessError("--key-socket: the launcher handed over no key")
        }
        return (handover, fd)
    }

    /// The connector's last words to the launcher: its exit status.
    static func report(status: Int32, on connection: Int32) {
        let line = Array("\(status)\n".utf8)
        _ = line.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
        close(connection)
    }

    enum Status {
        case waiting
        case exited(Int32)
        /// The connection closed without a status.
        case gone
    }

    /// What the connector said on `connection` within `timeout`.
    static func status(on connection: Int32, waiting timeout: Duration) -> Status {
        var poller = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout.components.seconds * 1000)) > 0 else { return .waiting }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
        guard count > 0 else { return .gone }
        let text = String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Int32(text).map(Status.exited) ?? .gone
    }

    private static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            errno = ENAMETOOLONG
            return -1
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}

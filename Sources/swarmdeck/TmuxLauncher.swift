import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `swarmdeck agent run --tmux NAME`: the connector runs inside a new detached tmux session
/// NAME, giving its command the pane's terminal (`--terminal`), so terminal-broker can show it
/// on a phone. The session is marked with the agent and swarm (session options
/// `@swarmdeck-agent`, `@swarmdeck-swarm`), which is how the broker maps it to the agent.
///
/// The ingest key never enters tmux (not its command line, not the server's or the session's
/// environment, which anything in the session could read back): this process hands it to the
/// connector in the pane through a FIFO in a private directory, which the connector reads, and
/// removes, before it starts the command. This process then waits until the session ends; a
/// SIGTERM, SIGINT or SIGHUP to it ends the session (the connector stops its command as on
/// any stop).
struct TmuxLauncher {
    /// tmux's session name: letters, digits, `_` and `-` (tmux itself turns `.` and `:` into `_`).
    static func problem(session name: String) -> String? {
        let allowed = name.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F || byte == 0x2D
        }
        return (1...64).contains(name.utf8.count) && allowed && !name.hasPrefix("-") ? nil : "1 to 64 of A-Z a-z 0-9 _ -, not starting with -"
    }

    /// `tmux -L NAME`: letters, digits, `.`, `_` and `-`.
    static func problem(socket name: String) -> String? {
        let allowed = name.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F || byte == 0x2D
                || byte == 0x2E
        }
        return (1...64).contains(name.utf8.count) && allowed && !name.hasPrefix("-") ? nil : "1 to 64 of A-Z a-z 0-9 . _ -, not starting with -"
    }

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

    /// Starts the session, hands over the key, and waits until the session is gone.
    func run() throws {
        guard let tmux = ChildProcess.resolve("tmux") else { throw ChildProcessError("--tmux needs tmux installed") }
        if try self.tmux(tmux, ["has-session", "-t", "=" + self.session]).status == 0 {
            throw ChildProcessError("a tmux session \(self.session) exists already\(self.socket.map { " on socket \($0)" } ?? "")")
        }
        var template = Array((NSTemporaryDirectory() + "/swarmdeck-key-XXXXXX").utf8CString)
        guard let directory = mkdtemp(&template).map({ String(cString: $0) }) else {
            throw ChildProcessError("a private directory for the key: \(String(cString: strerror(errno)))")
        }
        let fifo = directory + "/key"
        defer {
            unlink(fifo)
            rmdir(directory)
        }
        guard mkfifo(fifo, 0o600) == 0 else { throw ChildProcessError("mkfifo: \(String(cString: strerror(errno)))") }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let started = try self.tmux(
            tmux,
            ["new-session", "-d", "-s", self.session, "-x", "200", "-y", "50", executable] + self.connectorOptions + ["--key-fifo", fifo, "--"]
                + self.command
        )
        guard started.status == 0 else { throw ChildProcessError("tmux new-session failed: \(started.stderr)") }
        // The mapping terminal-broker reads; a session that ended at once just has none.
        _ = try? self.tmux(tmux, ["set-option", "-t", "=" + self.session + ":", "@swarmdeck-agent", self.agent])
        _ = try? self.tmux(tmux, ["set-option", "-t", "=" + self.session + ":", "@swarmdeck-swarm", self.swarm])
        do {
            try Self.hand(self.key, to: fifo, within: .seconds(15))
        } catch {
            _ = try? self.tmux(tmux, ["kill-session", "-t", "=" + self.session])
            throw error
        }
        // The connector in the pane: a stop waits for it to finish as well.
        let connector = try? self.tmux(tmux, ["display-message", "-p", "-t", "=" + self.session + ":", "#{pane_pid}"]).output
        let connectorPID = connector.flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        AgentConnector.say(
            "\(self.agent) runs in tmux session \(self.session): tmux\(self.socket.map { " -L \($0)" } ?? "") attach -t \(self.session)"
        )
        let stop = DispatchSemaphore(value: 0)
        let sources = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        defer { for source in sources { source.cancel() } }
        while try self.tmux(tmux, ["has-session", "-t", "=" + self.session]).status == 0 {
            if stop.wait(timeout: .now() + 1) == .success {
                _ = try? self.tmux(tmux, ["kill-session", "-t", "=" + self.session])
            }
        }
        // The session ends with its pane; the connector may still be reporting its command's end.
        if let connectorPID {
            let deadline = ContinuousClock.now + self.grace + .seconds(10)
            while kill(connectorPID, 0) == 0 && ContinuousClock.now < deadline { usleep(100_000) }
        }
        AgentConnector.say("\(self.agent): tmux session \(self.session) ended")
    }

    /// Writes `key` into the FIFO once the connector in the pane opens it.
    static func hand(_ key: String, to fifo: String, within timeout: Duration) throws {
        let deadline = ContinuousClock.now + timeout
        var fd: Int32 = -1
        while fd < 0 {
            fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd < 0 else { break }
            guard errno == ENXIO, ContinuousClock.now < deadline else {
                throw ChildProcessError("the connector in the tmux session did not take its key (\(String(cString: strerror(errno))))")
            }
            usleep(20_000)
        }
        defer { close(fd) }
        let bytes = Array((key + "\n").utf8)
        guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw ChildProcessError("handing the key over: \(String(cString: strerror(errno)))")
        }
    }

    /// The key the launcher hands over through `fifo` (`--key-fifo`), which is then removed.
    static func receiveKey(from fifo: String) throws -> String {
        var info = stat()
        guard lstat(fifo, &info) == 0, info.st_mode & S_IFMT == S_IFIFO, info.st_uid == geteuid() else {
            throw ChildProcessError("--key-fifo \(fifo) is not a FIFO of this user")
        }
        let fd = open(fifo, O_RDONLY | O_CLOEXEC)
        unlink(fifo)
        guard fd >= 0 else { throw ChildProcessError("--key-fifo: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var count = 0
        while count < buffer.count {
            let read = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else { break }
            count += read
        }
        let key = String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !key.isEmpty else { throw ChildProcessError("--key-fifo: no key came") }
        return key
    }

    /// Runs `tmux [-L socket] ARGS` with an environment that holds no key, and waits for it.
    private func tmux(_ tmux: String, _ arguments: [String]) throws -> (status: Int32, output: String, stderr: String) {
        var errors: [Int32] = [0, 0]
        var output: [Int32] = [0, 0]
        guard pipe(&errors) == 0 else { throw ChildProcessError("pipe: \(String(cString: strerror(errno)))") }
        guard pipe(&output) == 0 else {
            close(errors[0])
            close(errors[1])
            throw ChildProcessError("pipe: \(String(cString: strerror(errno)))")
        }
        let argv = [tmux] + (self.socket.map { ["-L", $0] } ?? []) + arguments
        let environment = ChildProcess.environment(hiding: ["SWARMDECK_INGEST_KEY"], secrets: [self.key])
        let spawned = ChildProcess.spawn(argv, environment: environment, newSession: false) { actions in
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_adddup2(&actions, output[1], 1)
            posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
            for fd in output + errors { posix_spawn_file_actions_addclose(&actions, fd) }
        }
        close(errors[1])
        close(output[1])
        defer {
            close(errors[0])
            close(output[0])
        }
        let pid = try spawned.get()
        // tmux prints little; both fit in the pipes' buffers, so reading one after the other is safe.
        let printed = Self.read(output[0])
        let complaint = Self.read(errors[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (code, printed, complaint)
    }

    /// The first 4 KiB of what `fd` gives until its end.
    private static func read(_ fd: Int32) -> String {
        var text: [UInt8] = []
        ChildProcess.readLines(fd) { line in
            if text.count < 4096 { text += line + [0x0A] }
        }
        return String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

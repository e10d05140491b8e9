import CProcessControl
import Foundation
import SwarmdeckTools
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A command started in its own process group, with its stdout and stderr read line by line:
/// what the agent connector runs and signals. Signals go to the whole group and to every other
/// descendant of the connector, which is their subreaper (`PR_SET_CHILD_SUBREAPER`): a child
/// that moved to a group or session of its own (`setsid`) or double-forked away from its parent
/// is still found, so a script's children pause, resume and end with it.
///
/// With a terminal (``init(_:acceptsInput:inputLimit:hiding:secrets:adding:user:terminal:)``),
/// the command runs in a session of its own on a pseudo-terminal, as under `script(1)`: what it
/// writes is copied to the connector's standard output unchanged (a tmux pane, for one) and read
/// as plain lines, what is typed on the connector's standard input reaches it, and it has the
/// connector's window size.
///
/// It is started through util-linux's `setpriv`, which sets its parent-death signal (SIGKILL:
/// if the connector dies, however it dies, its command dies with it) and, with a ``User``, its
/// user and groups, before it executes the command in place (same pid). The parent-death
/// signal fires when the thread that started the process ends, so the process is started from
/// a thread of its own that lives until it is reaped.
final class ChildProcess: Sendable {
    /// Whom the command runs as (the connector must run as root to switch).
    struct User: Sendable {
        var uid: uid_t
        var gid: gid_t

        /// The user named `name` (or a numeric uid) in the password database.
        init(_ name: String) throws {
            guard let entry = (UInt32(name).flatMap { getpwuid($0) }) ?? getpwnam(name) else {
                throw ChildProcessError("no user \(name) on this host")
            }
            self.uid = entry.pointee.pw_uid
            self.gid = entry.pointee.pw_gid
        }
    }

    /// `NAME=value` entries of this process's environment (or of `base`), less the hidden names, every
    /// `SWARMDECK_*` variable (the local stack's env file puts an operator token, the ingest key
    /// and database URLs there) and any value holding a secret.
    static func environment(hiding: Set<String>, secrets: [String], from base: [String]? = nil) -> [String] {
        let variables =
            base.map { entries in
                Dictionary(
                    entries.compactMap { entry in entry.firstIndex(of: "=").map { (String(entry[..<$0]), String(entry[entry.index(after: $0)...])) } }
                ) {
                    $1
                }
            } ?? ProcessInfo.processInfo.environment
        return variables.compactMap { name, value in
            guard !hiding.contains(name), !name.hasPrefix("SWARMDECK_"), !secrets.contains(where: { !$0.isEmpty && value.contains($0) }) else {
                return nil
            }
            return "\(name)=\(value)"
        }
    }

    /// The full path of `command` as `PATH` finds it, or nil.
    static func resolve(_ command: String) -> String? {
        if command.contains("/") { return access(command, X_OK) == 0 ? command : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(command)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// The process id (and process group id).
    let pid: pid_t
    /// Lines of output: (line, from stderr).
    let lines: AsyncStream<(String, Bool)>
    /// The exit: the status code, or 128 + the signal that ended it.
    let exit: Task<Int32, Never>
    /// Lines dropped because the reader fell 10 000 behind, not yet reported.
    private let dropped = DropCounter()

    /// Where ``send(line:)`` goes: the process's standard input, if it has one.
    private let input: InputQueue?
    /// Whether ``send(line:)`` may write to it.
    private let acceptsLines: Bool
    /// The pseudo-terminal it runs on, if any.
    private let terminal: ChildTerminal?
    /// The cgroup of its own it runs in, where the host allows one (``CommandCgroup``).
    let cgroup: CommandCgroup?
    /// Set once its output has been read to the end.
    private let outputDone = OutputDone()

    /// Starts `arguments[0]` (looked up in `PATH`) with the rest as its arguments; with
    /// `acceptsInput`, its standard input is a pipe fed by a queue of at most `inputLimit`
    /// bytes (else /dev/null). Its environment is this process's without the variables `hiding`
    /// names and without any variable whose value contains one of `secrets` (the connector's
    /// ingest key), plus the `NAME=value` entries of `adding`; with `user`, it runs as that user.
    /// With `terminal`, it runs on a pseudo-terminal (see the type's notes); `acceptsInput` then
    /// only says whether ``send(line:)`` may type lines into it.
    convenience init(
        _ arguments: [String],
        acceptsInput: Bool = false,
        inputLimit: Int = 1 << 20,
        environment base: [String]? = nil,
        hiding: Set<String> = [],
        secrets: [String] = [],
        adding: [String] = [],
        user: User? = nil,
        terminal: Bool = false,
        maxLineBytes: Int = 64 << 10
    ) throws {
        precondition(!arguments.isEmpty)
        guard let executable = Self.resolve(arguments[0]) else {
            throw ChildProcessError("cannot start \(arguments[0]): not found or not executable")
        }
        guard let setpriv = Self.resolve("setpriv") else {
            throw ChildProcessError("setpriv (util-linux) is needed to tie the command's life to the connector's")
        }
        var wrapper = [setpriv, "--pdeathsig", "KILL"]
        if let user { wrapper += ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--init-groups"] }
        let argv = wrapper + ["--", executable] + arguments.dropFirst()
        let environment = Self.environment(hiding: hiding, secrets: secrets, from: base) + adding
        // Orphans of the command come back to this process, not init: they stay findable.
        guard swarmdeck_become_subreaper() == 0 else {
            throw ChildProcessError("cannot become the command's subreaper: \(String(cString: strerror(errno)))")
        }
        // A cgroup of its own where the host allows one (``CommandCgroup``).
        let cgroup = CommandCgroup.make()
        do {
            if terminal {
                try self.init(terminal: argv, environment: environment, acceptsLines: acceptsInput, inputLimit: inputLimit, cgroup: cgroup)
            } else {
                try self.init(
                    pipes: argv,
                    environment: environment,
                    acceptsInput: acceptsInput,
                    inputLimit: inputLimit,
                    maxLineBytes: maxLineBytes,
                    cgroup: cgroup
                )
            }
        } catch {
            cgroup?.remove()
            throw error
        }
    }

    /// The command with pipes for its standard output and error (and input, `acceptsInput`).
    private init(pipes argv: [String], environment: [String], acceptsInput: Bool, inputLimit: Int, maxLineBytes: Int, cgroup: CommandCgroup?) throws {
        var stdout: [Int32] = [0, 0]
        var stderr: [Int32] = [0, 0]
        var stdin: [Int32] = [-1, -1]
        guard pipe(&stdout) == 0, pipe(&stderr) == 0, !acceptsInput || pipe(&stdin) == 0 else {
            throw ChildProcessError("pipe: \(String(cString: strerror(errno)))")
        }
        let descriptors = (stdin: stdin, stdout: stdout, stderr: stderr)
        let (pid, exitCode, inCgroup) = try Self.start(in: cgroup) {
            Self.spawn(argv, environment: environment, acceptsInput: acceptsInput, descriptors)
        } whenStarted: {
            close(stdout[1])
            close(stderr[1])
            if acceptsInput { close(stdin[0]) }
        } ifFailed: {
            close(stdout[0])
            close(stderr[0])
            if acceptsInput { close(stdin[1]) }
        }
        self.pid = pid
        self.cgroup = inCgroup ? cgroup : nil
        self.acceptsLines = acceptsInput
        self.input = acceptsInput ? InputQueue(fd: stdin[1], limit: inputLimit) : nil
        self.terminal = nil
        let dropped = self.dropped
        let (lines, continuation) = AsyncStream.makeStream(of: (String, Bool).self, bufferingPolicy: .bufferingNewest(10_000))
        self.lines = lines
        let readers = DispatchGroup()
        for (fd, isError) in [(stdout[0], false), (stderr[0], true)] {
            readers.enter()
            Thread.detachNewThread {
                // stderr is the command's log: its lines are log events, cut at 64 KiB.
                Self.readLines(fd, maxLineBytes: isError ? 64 << 10 : maxLineBytes) { line in
                    if case .dropped = continuation.yield((String(decoding: line, as: UTF8.self), isError)) { dropped.count.withLock { $0 += 1 } }
                }
                close(fd)
                readers.leave()
            }
        }
        let outputDone = self.outputDone
        readers.notify(queue: .global()) {
            outputDone.value.withLock { $0 = true }
            continuation.finish()
        }
        let input = self.input
        self.exit = Task.detached {
            var code: Int32 = 0
            for await status in exitCode { code = status }
            input?.close()
            return code
        }
    }

    /// The command on a pseudo-terminal (see the type's notes).
    private init(terminal argv: [String], environment: [String], acceptsLines: Bool, inputLimit: Int, cgroup: CommandCgroup?) throws {
        let terminal = try ChildTerminal.open()
        let slave = terminal.slavePath
        let master = terminal.master
        let (pid, exitCode, inCgroup) = try Self.start(in: cgroup) {
            Self.spawn(argv, environment: environment, newSession: true) { actions in
                posix_spawn_file_actions_addclose(&actions, master)
                posix_spawn_file_actions_addopen(&actions, 0, slave, O_RDWR, 0)
                posix_spawn_file_actions_adddup2(&actions, 0, 1)
                posix_spawn_file_actions_adddup2(&actions, 0, 2)
            }
        } whenStarted: {
        } ifFailed: {
            terminal.close()
        }
        self.pid = pid
        self.acceptsLines = acceptsLines
        self.terminal = terminal
        self.cgroup = inCgroup ? cgroup : nil
        let input = InputQueue(fd: fcntl(master, F_DUPFD_CLOEXEC, 0), limit: inputLimit)
        self.input = input
        terminal.forwardKeystrokes(to: input)
        let dropped = self.dropped
        let (lines, continuation) = AsyncStream.makeStream(of: (String, Bool).self, bufferingPolicy: .bufferingNewest(10_000))
        self.lines = lines
        let outputDone = self.outputDone
        Thread.detachNewThread {
            Self.readLines(master, copy: ChildTerminal.writeToStandardOutput) { line in
                if case .dropped = continuation.yield((TerminalText.plain(line), false)) { dropped.count.withLock { $0 += 1 } }
            }
            terminal.close()
            outputDone.value.withLock { $0 = true }
            continuation.finish()
        }
        self.exit = Task.detached {
            var code: Int32 = 0
            for await status in exitCode { code = status }
            input.close()
            terminal.restore()
            return code
        }
    }

    /// Runs `spawn` on a thread of its own that then waits for the process (its parent-death
    /// signal is tied to that thread); `whenStarted` or `ifFailed` runs once it is known.
    /// With `cgroup`, this process is in it while `spawn` runs, so the process is born there.
    /// Returns the pid, a stream that yields its exit status, and whether it is in `cgroup`
    /// (else the cgroup is removed, or, should this process be unable to leave it, left alone:
    /// it must then never be frozen or killed).
    private static func start(
        in cgroup: CommandCgroup?,
        _ spawn: @escaping @Sendable () -> Result<pid_t, ChildProcessError>,
        whenStarted: () -> Void,
        ifFailed: () -> Void
    ) throws -> (pid_t, AsyncStream<Int32>, Bool) {
        let entered = cgroup?.enter() ?? false
        defer {
            if let cgroup, !entered { cgroup.remove() }
        }
        let started = Mutex<Result<pid_t, ChildProcessError>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let (exitCode, exited) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .bufferingNewest(1))
        Thread.detachNewThread {
            let result = spawn()
            started.withLock { $0 = result }
            ready.signal()
            guard case .success(let child) = result else { return }
            // This thread is the command's parent as far as its death signal goes: it ends once
            // the command has been reaped.
            var status: Int32 = 0
            while waitpid(child, &status, 0) == -1 && errno == EINTR {}
            exited.yield(Spawn.exitCode(status))
            exited.finish()
        }
        ready.wait()
        let inCgroup = entered && cgroup?.leave() == true
        if let cgroup, entered, !inCgroup {
            AgentConnector.say("kill switch: cannot leave the command's cgroup \(cgroup.path): the cgroup is not used")
        }
        whenStarted()
        switch started.withLock({ $0 })! {
        case .failure(let error):
            ifFailed()
            if inCgroup { cgroup?.remove() }
            throw error
        case .success(let child):
            return (child, exitCode, inCgroup)
        }
    }

    private static func spawn(
        _ arguments: [String],
        environment: [String],
        acceptsInput: Bool,
        _ fds: (stdin: [Int32], stdout: [Int32], stderr: [Int32])
    ) -> Result<pid_t, ChildProcessError> {
        Self.spawn(arguments, environment: environment, newSession: false) { actions in
            if acceptsInput {
                posix_spawn_file_actions_adddup2(&actions, fds.stdin[0], 0)
                posix_spawn_file_actions_addclose(&actions, fds.stdin[0])
                posix_spawn_file_actions_addclose(&actions, fds.stdin[1])
            } else {
                posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            }
            posix_spawn_file_actions_adddup2(&actions, fds.stdout[1], 1)
            posix_spawn_file_actions_adddup2(&actions, fds.stderr[1], 2)
            for fd in fds.stdout + fds.stderr { posix_spawn_file_actions_addclose(&actions, fd) }
        }
    }

    /// Starts `arguments` with `environment`, its descriptors as `files` arranges them, in a
    /// process group of its own, or with `newSession` a session of its own (whose first
    /// terminal opened becomes its controlling terminal).
    static func spawn(
        _ arguments: [String],
        environment: [String],
        newSession: Bool,
        files: (inout posix_spawn_file_actions_t) -> Void
    ) -> Result<pid_t, ChildProcessError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        files(&actions)
        // Nothing but what `files` arranged: a socket or epoll descriptor some library opened
        // without close-on-exec would otherwise reach the command.
        _ = swarmdeck_spawn_close_from(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group (pgid = its pid), or session (which is a group too); default
        // signal handling restored.
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        let group = newSession ? swarmdeck_spawn_setsid_flag() : Int16(POSIX_SPAWN_SETPGROUP)
        posix_spawnattr_setflags(&attributes, group | Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        var pid = pid_t()
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let environment = environment.map { strdup($0) } + [nil]
        defer { for pointer in environment { free(pointer) } }
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, environment)
        guard status == 0 else { return .failure(ChildProcessError("cannot start \(arguments[0]): \(String(cString: strerror(status)))")) }
        return .success(pid)
    }

    /// Queues one line for the process's standard input; a writer thread of its own writes
    /// it, so a process that does not read (paused, busy) never blocks the caller.
    /// - Throws: if it takes no input, has stopped reading, or its queue is full.
    func send(line: String) throws {
        guard self.acceptsLines, let input else { throw ChildProcessError("the command was not started with --worker: it takes no input") }
        try input.append(Array((line + "\n").utf8))
    }

    /// Bytes queued for the process's standard input and not written yet.
    var queuedInput: Int { self.input?.queued ?? 0 }

    /// Lines dropped since the last call.
    func droppedLines() -> Int {
        self.dropped.count.withLock { count in
            defer { count = 0 }
            return count
        }
    }

    /// Sends `signal` to the process group, on a terminal to its foreground group too (a shell's
    /// job runs in a group of its own), then to every other descendant of this process, in
    /// passes until one finds no process it has not signalled (one forked meanwhile is caught
    /// by the next), at most 8. Answers whether the group could be signalled (errno says why
    /// not).
    @discardableResult
    func signal(_ signal: Int32) -> Bool {
        if let foreground = self.terminal?.foregroundGroup(), foreground != self.pid { kill(-foreground, signal) }
        let sent = kill(-self.pid, signal) == 0
        let error = errno
        var signalled: Set<Int32> = []
        for _ in 0..<8 {
            let fresh = self.processes().keys.filter { !signalled.contains($0) }
            if fresh.isEmpty { break }
            for pid in fresh {
                kill(pid, signal)
                signalled.insert(pid)
            }
        }
        errno = error
        return sent
    }

    /// Every live process the command started (zombies left out), wherever it went.
    func processes(in table: [Int32: ProcessTree.Entry] = ProcessTree.table()) -> [Int32: Character] {
        ProcessTree.descendants(of: getpid(), in: table).filter { $0.value != "Z" }
    }

    /// Reaps the adopted orphans that have exited (the command itself is reaped by its thread),
    /// as `table` lists them.
    func reapAdopted(in table: [Int32: ProcessTree.Entry] = ProcessTree.table()) {
        let me = getpid()
        for (pid, entry) in table where entry.parent == me && entry.state == "Z" && pid != self.pid {
            var status: Int32 = 0
            _ = waitpid(pid, &status, WNOHANG)
        }
    }

    /// SIGSTOP to every process of the command until each is stopped, at most `timeout`: a
    /// stopped process cannot fork, so a chain that forks and exits ahead of one pass is caught
    /// by the next. A process in uninterruptible sleep (`D`) stops as it leaves it and counts as
    /// stopping. Answers the pids still running then, and those the connector may not signal
    /// (another user's, a setuid program's).
    func stopEveryProcess(within timeout: Duration = .seconds(5)) async -> (running: [Int32], unsignallable: [Int32]) {
        let deadline = ContinuousClock.now + timeout
        while true {
            self.signal(SIGSTOP)
            var running: [Int32] = []
            var unsignallable: [Int32] = []
            for (pid, state) in self.processes() where !["T", "t", "D"].contains(state) {
                if kill(pid, 0) != 0 && errno == EPERM { unsignallable.append(pid) } else { running.append(pid) }
            }
            if running.isEmpty || ContinuousClock.now >= deadline { return (running.sorted(), unsignallable.sorted()) }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Every process of the command stopped (so none forks meanwhile), then SIGKILL to each
    /// until none is left, at most `timeout`; answers the pids still alive then (a process in
    /// uninterruptible sleep can outlive SIGKILL a while).
    func killEveryProcess(within timeout: Duration = .seconds(10)) async -> [Int32] {
        let deadline = ContinuousClock.now + timeout
        // The cgroup's members, wherever they are, at once (frozen ones too).
        self.cgroup?.kill()
        _ = await self.stopEveryProcess(within: .seconds(2))
        while true {
            self.cgroup?.kill()
            self.signal(SIGKILL)
            let table = ProcessTree.table()
            self.reapAdopted(in: table)
            let left = Set(self.processes(in: table).keys).union(self.cgroup?.members ?? []).sorted()
            // Empty means no descendant, and nothing in the cgroup or the cgroups below it.
            if left.isEmpty && self.cgroup?.isPopulated != true {
                self.cgroup?.remove()
                return left
            }
            if ContinuousClock.now >= deadline { return left }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits until the command's output has been read to its end (its last lines after it
    /// exited), at most `timeout` (a process it left behind may hold its output open).
    func outputEnded(within timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        while !self.outputDone.value.withLock({ $0 }) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Reads `fd` to its end (or, for a terminal, until it fails: EIO once the command's side
    /// is closed), handing each chunk read to `copy` and each line to `line`.
    static func readLines(
        _ fd: Int32,
        maxLineBytes: Int = 64 << 10,
        copy: (UnsafeRawBufferPointer) -> Void = { _ in },
        _ line: (ArraySlice<UInt8>) -> Void
    ) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            buffer.withUnsafeBytes { copy(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            pending.append(contentsOf: buffer[0..<count])
            while let newline = pending.firstIndex(of: 0x0A) {
                line(pending[..<newline])
                pending.removeSubrange(...newline)
            }
            // A line longer than maxLineBytes is cut.
            if pending.count > maxLineBytes {
                line(pending[...])
                pending.removeAll()
            }
        }
        if !pending.isEmpty { line(pending[...]) }
    }
}

private final class DropCounter: Sendable {
    let count = Mutex(0)
}

private final class OutputDone: Sendable {
    let value = Mutex(false)
}

struct ChildProcessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

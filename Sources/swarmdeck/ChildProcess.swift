import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A command started in its own process group, with its stdout and stderr read line by line:
/// what the agent connector runs and signals. Signals go to the whole group, so a script's
/// children pause, resume and end with it.
final class ChildProcess: Sendable {
    /// `NAME=value` entries of this process's environment, less the hidden names, every
    /// `SWARMDECK_*` variable (the local stack's env file puts an operator token, the ingest key
    /// and database URLs there) and any value holding a secret.
    static func environment(hiding: Set<String>, secrets: [String]) -> [String] {
        ProcessInfo.processInfo.environment.compactMap { name, value in
            guard !hiding.contains(name), !name.hasPrefix("SWARMDECK_"), !secrets.contains(where: { !$0.isEmpty && value.contains($0) }) else {
                return nil
            }
            return "\(name)=\(value)"
        }
    }

    /// The process id (and process group id).
    let pid: pid_t
    /// Lines of output: (line, from stderr).
    let lines: AsyncStream<(String, Bool)>
    /// The exit: the status code, or 128 + the signal that ended it.
    let exit: Task<Int32, Never>
    /// Lines dropped because the reader fell 10 000 behind, not yet reported.
    private let dropped = DropCounter()

    /// Where ``write(line:)`` goes: the write end of the process's standard input, if it has one.
    private let input: Int32?

    /// Starts `arguments[0]` (looked up in `PATH`) with the rest as its arguments; with
    /// `acceptsInput`, its standard input is a pipe ``write(line:)`` writes to (else /dev/null).
    /// Its environment is this process's without the variables `hiding` names and without any
    /// variable whose value contains one of `secrets` (the connector's ingest key).
    init(_ arguments: [String], acceptsInput: Bool = false, hiding: Set<String> = [], secrets: [String] = []) throws {
        precondition(!arguments.isEmpty)
        var stdout: [Int32] = [0, 0]
        var stderr: [Int32] = [0, 0]
        var stdin: [Int32] = [-1, -1]
        guard pipe(&stdout) == 0, pipe(&stderr) == 0, !acceptsInput || pipe(&stdin) == 0 else {
            throw ChildProcessError("pipe: \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if acceptsInput {
            posix_spawn_file_actions_adddup2(&actions, stdin[0], 0)
            posix_spawn_file_actions_addclose(&actions, stdin[0])
            posix_spawn_file_actions_addclose(&actions, stdin[1])
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, stdout[1], 1)
        posix_spawn_file_actions_adddup2(&actions, stderr[1], 2)
        for fd in stdout + stderr { posix_spawn_file_actions_addclose(&actions, fd) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group (pgid = its pid); default signal handling restored.
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        var pid = pid_t()
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let environment = Self.environment(hiding: hiding, secrets: secrets).map { strdup($0) } + [nil]
        defer { for pointer in environment { free(pointer) } }
        let status = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environment)
        close(stdout[1])
        close(stderr[1])
        if acceptsInput { close(stdin[0]) }
        guard status == 0 else {
            close(stdout[0])
            close(stderr[0])
            if acceptsInput { close(stdin[1]) }
            throw ChildProcessError("cannot start \(arguments[0]): \(String(cString: strerror(status)))")
        }
        self.pid = pid
        self.input = acceptsInput ? stdin[1] : nil
        let child = pid
        let dropped = self.dropped
        let (lines, continuation) = AsyncStream.makeStream(of: (String, Bool).self, bufferingPolicy: .bufferingNewest(10_000))
        self.lines = lines
        let readers = DispatchGroup()
        for (fd, isError) in [(stdout[0], false), (stderr[0], true)] {
            readers.enter()
            Thread.detachNewThread {
                Self.readLines(fd) { line in
                    if case .dropped = continuation.yield((line, isError)) { dropped.count.withLock { $0 += 1 } }
                }
                close(fd)
                readers.leave()
            }
        }
        readers.notify(queue: .global()) { continuation.finish() }
        self.exit = Task.detached {
            await withCheckedContinuation { (done: CheckedContinuation<Int32, Never>) in
                Thread.detachNewThread {
                    var status: Int32 = 0
                    while waitpid(child, &status, 0) == -1 && errno == EINTR {}
                    let code: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
                    done.resume(returning: code)
                }
            }
        }
    }

    /// Writes one line to the process's standard input.
    /// - Throws: if it has none, or it no longer reads it.
    func write(line: String) throws {
        guard let input else { throw ChildProcessError("the command was not started with --worker: it takes no input") }
        var bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(input, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                throw ChildProcessError("writing to the command's input: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
        bytes.removeAll()
    }

    /// Lines dropped since the last call.
    func droppedLines() -> Int {
        self.dropped.count.withLock { count in
            defer { count = 0 }
            return count
        }
    }

    /// Sends `signal` to the process group.
    @discardableResult
    func signal(_ signal: Int32) -> Bool {
        kill(-self.pid, signal) == 0
    }

    private static func readLines(_ fd: Int32, _ line: (String) -> Void) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            pending.append(contentsOf: buffer[0..<count])
            while let newline = pending.firstIndex(of: 0x0A) {
                line(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
            }
            // A line longer than 64 KiB is cut.
            if pending.count > 64 << 10 {
                line(String(decoding: pending, as: UTF8.self))
                pending.removeAll()
            }
        }
        if !pending.isEmpty { line(String(decoding: pending, as: UTF8.self)) }
    }
}

private final class DropCounter: Sendable {
    let count = Mutex(0)
}

struct ChildProcessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

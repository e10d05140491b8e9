import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Short-lived processes started and waited for by pid: the tests' tools (sshd, tmux,
/// ssh-keygen, the connector), the benches' tmux, the connector's tmux launcher.
///
/// Not with Foundation's `Process`: on Linux it learns that a child exited when a socket the
/// child inherited closes, and what sshd and tmux fork (connections, the tmux server) inherit
/// it and hold it for as long as they live, so `waitUntilExit` never returns. Output goes
/// through a file (a pipe would stay open the same way).
public enum Spawn {
    /// Runs `path` to its end.
    public static func run(_ path: String, _ arguments: [String]) throws {
        _ = try Self.output(path, arguments)
    }

    /// Runs `path` to its end and returns what it wrote to its standard output.
    public static func output(_ path: String, _ arguments: [String], environment: Environment = .inherited([:])) throws -> String {
        try Self.result(path, arguments, environment: environment).output
    }

    /// Runs `path` to its end: its exit status (128 + the signal that ended it) and what it
    /// wrote to its standard output and error (each as the file holds it).
    public static func result(
        _ path: String,
        _ arguments: [String],
        environment: Environment = .inherited([:])
    ) throws -> (
        status: Int32, output: String, errors: String
    ) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sdt-out-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: file)
            try? FileManager.default.removeItem(atPath: file.path + ".err")
        }
        let pid = try Self.start(path, arguments, output: file.path, errors: file.path + ".err", environment: environment)
        let status = Self.reap(pid)
        return (
            status, (try? String(contentsOf: file, encoding: .utf8)) ?? "",
            (try? String(contentsOfFile: file.path + ".err", encoding: .utf8)) ?? ""
        )
    }

    /// The exit status `waitpid` reported: the code, or 128 + the signal that ended it.
    public static func exitCode(_ status: Int32) -> Int32 {
        (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// Waits for `pid` to exit and returns its exit status (``exitCode(_:)``).
    @discardableResult
    public static func reap(_ pid: Int32) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return Self.exitCode(status)
    }

    /// Whether `pid` has exited (and reaps it then); nil while it runs.
    public static func exited(_ pid: Int32) -> Int32? {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        return Self.exitCode(status)
    }

    /// The environment a process starts with.
    public enum Environment: Sendable {
        /// This process's (less `TMUX`, `TMUX_TMPDIR`, so a tmux started inside one starts its
        /// own server) with these over it.
        case inherited([String: String])
        /// Exactly these `NAME=value` entries.
        case exactly([String])
    }

    /// Starts `path` with its standard output to the file `output`, its standard error to the
    /// file `errors` (or /dev/null), default signal handling; returns its pid.
    public static func start(
        _ path: String,
        _ arguments: [String],
        output: String,
        errors: String? = nil,
        environment: Environment = .inherited([:])
    ) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let entries: [String]
        switch environment {
        case .exactly(let given):
            entries = given
        case .inherited(let over):
            var variables = ProcessInfo.processInfo.environment
            variables["TMUX"] = nil
            variables["TMUX_TMPDIR"] = nil
            variables.merge(over) { $1 }
            entries = variables.map { "\($0.key)=\($0.value)" }
        }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = entries.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        // Default signal handling in the child, whatever this process ignores or blocks.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var pid = pid_t()
        let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        return pid
    }
}

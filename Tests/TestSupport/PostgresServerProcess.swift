public import Foundation

/// A Postgres cluster of the test's own, to stop and restart under a running service.
/// Runs as the `postgres` user when the tests run as root (Postgres refuses root).
public final class PostgresServerProcess: @unchecked Sendable {
    public let port: Int
    public let directory: URL
    private let binaries: String

    /// A new cluster (`initdb`, on a thread of its own: ``offPool(_:)``), not started.
    public static func make() async throws -> PostgresServerProcess {
        try await offPool { try PostgresServerProcess() }
    }

    /// A streaming replica of `primary` (``init(replicaOf:synchronous:)``), made on a thread of its own.
    public static func replica(of primary: PostgresServerProcess, synchronous: Bool) async throws -> PostgresServerProcess {
        try await offPool { try PostgresServerProcess(replicaOf: primary, synchronous: synchronous) }
    }

    private init() throws {
        self.binaries = ProcessInfo.processInfo.environment["SWARMDECK_PG_BIN"] ?? "/usr/lib/postgresql/15/bin"
        self.port = try freeLoopbackPort()
        self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        try self.asPostgres(["chown", "postgres", self.directory.path], asRoot: true)
        try self.asPostgres([
            "\(self.binaries)/initdb", "-D", self.dataPath, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C",
        ])
        try self.appendSettings(
            "listen_addresses = '127.0.0.1'\nport = \(self.port)\nunix_socket_directories = '\(self.directory.path)'\nfsync = off\n"
        )
    }

    /// A streaming replica of `primary` (running), from its base backup: started with
    /// ``start()``, made the primary with ``promote()``. With `synchronous`, the primary waits for
    /// it at each commit (set on the primary, which reloads).
    private init(replicaOf primary: PostgresServerProcess, synchronous: Bool) throws {
        self.binaries = primary.binaries
        self.port = try freeLoopbackPort()
        self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        try self.asPostgres(["chown", "postgres", self.directory.path], asRoot: true)
        try self.asPostgres([
            "\(self.binaries)/pg_basebackup", "-h", "127.0.0.1", "-p", String(primary.port), "-U", "postgres", "-D", self.dataPath, "-R",
            "-X", "stream", "--no-sync",
        ])
        // Later lines win: its own port and socket, and no standby of its own to wait for.
        try self.appendSettings(
            "port = \(self.port)\nunix_socket_directories = '\(self.directory.path)'\nsynchronous_standby_names = ''\n"
        )
        if synchronous {
            try primary.appendSettings("synchronous_standby_names = '*'\nsynchronous_commit = on\n")
            try self.asPostgres(["\(self.binaries)/pg_ctl", "reload", "-D", primary.dataPath])
        }
    }

    private func appendSettings(_ settings: String) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: self.dataPath + "/postgresql.conf"))
        handle.seekToEndOfFile()
        handle.write(Data(settings.utf8))
        try handle.close()
    }

    /// Ends recovery: the replica takes writes (`pg_ctl promote`, waiting until it does).
    public func promote() async throws {
        try await offPool { try self.promoteNow() }
    }

    private func promoteNow() throws {
        try self.asPostgres(["\(self.binaries)/pg_ctl", "promote", "-w", "-D", self.dataPath])
    }

    public var url: String { "postgres://postgres@127.0.0.1:\(self.port)/postgres" }
    private var dataPath: String { self.directory.path + "/data" }

    // Run in the foreground as our child: waiting on a daemonizing pg_ctl hung under Foundation's
    // Process (the postmaster keeps a descriptor Process waits on).
    private var server: Process?

    /// Starts the server, waiting for it on a thread of its own.
    public func start() async throws {
        try await offPool { try self.startNow() }
    }

    private func startNow() throws {
        let process = Process()
        let command = ["\(self.binaries)/postgres", "-D", self.dataPath]
        if getuid() == 0 {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", "postgres", "--"] + command
        } else {
            process.executableURL = URL(fileURLWithPath: command[0])
            process.arguments = Array(command.dropFirst())
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.server = process
        try self.waitForPort(open: true)
    }

    /// Stops at once (SIGQUIT to the postmaster: immediate shutdown), as a crash would.
    public func stop() async throws {
        try await offPool { try self.stopNow() }
    }

    private func stopNow() throws {
        let pidFile = try String(contentsOfFile: self.dataPath + "/postmaster.pid", encoding: .utf8)
        guard let pid = pidFile.split(separator: "\n").first.flatMap({ Int32($0) }) else { throw POSIXError(.ESRCH) }
        kill(pid, SIGQUIT)
        try self.waitForPort(open: false)
        self.server?.waitUntilExit()
        self.server = nil
    }

    private func waitForPort(open: Bool) throws {
        try TestSupport.waitForPort(self.port, open: open, timeout: 30)
        // Postgres accepts TCP a moment before it accepts logins.
        if open { usleep(200_000) }
    }

    deinit {
        if self.server != nil { try? self.stopNow() }
        try? FileManager.default.removeItem(at: self.directory)
    }

    private func asPostgres(_ command: [String], asRoot: Bool = false) throws {
        let process = Process()
        if getuid() == 0 && !asRoot {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", "postgres", "--"] + command
        } else if asRoot && getuid() != 0 {
            return  // not root: the directory is already ours
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = command
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw POSIXError(.EIO, userInfo: [NSLocalizedDescriptionKey: "\(command.joined(separator: " ")) exited \(process.terminationStatus)"])
        }
    }
}

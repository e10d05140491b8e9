import Foundation

/// Debian's PgBouncer in transaction mode in front of the test Postgres, for tests of a service
/// behind a transaction pooler (`postgres.role-settings`). Loopback only; users are let in
/// without a password, as the test Postgres lets them in.
public final class PgBouncerProcess: @unchecked Sendable {
    public let port: Int
    private let directory: URL
    private let postgres: URLComponents
    private var postgresPort: Int
    private var process: Process?

    /// A PgBouncer for `users` in front of the Postgres `postgresURL` names.
    public init(postgresURL: String, users: [String]) throws {
        guard let postgres = URLComponents(string: postgresURL), postgres.host != nil, postgres.port != nil else {
            throw HarnessError(message: "PgBouncer needs a Postgres URL with a host and a port, not \(postgresURL)")
        }
        self.postgres = postgres
        self.postgresPort = postgres.port!
        self.port = try freeLoopbackPort()
        self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("pgbouncer-test-\(UUID().uuidString)")
        // Run as postgres when the tests run as root (PgBouncer refuses root): it writes its log here.
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: self.directory.path)
        let users = users.map { "\"\($0)\" \"\"" }.joined(separator: "\n") + "\n"
        try users.write(to: self.directory.appendingPathComponent("users.txt"), atomically: true, encoding: .utf8)
        let configuration = """
            [databases]
            * = host=\(postgres.host!) port=\(postgres.port!)
            [pgbouncer]
            listen_addr = 127.0.0.1
            listen_port = \(self.port)
            unix_socket_dir =
            auth_type = trust
            auth_file = \(self.directory.path)/users.txt
            pool_mode = transaction
            max_client_conn = 200
            default_pool_size = 4
            logfile = \(self.directory.path)/pgbouncer.log
            """
        try (configuration + "\n").write(to: self.directory.appendingPathComponent("pgbouncer.ini"), atomically: true, encoding: .utf8)
    }

    /// Sends the server connections to the Postgres at `port` on loopback, as a failover manager
    /// does on a promotion: the file rewritten, and PgBouncer started again on its port (its
    /// clients reconnect).
    public func repoint(toPort port: Int) async throws {
        try await offPool { try self.repointNow(toPort: port) }
    }

    private func repointNow(toPort port: Int) throws {
        let file = self.directory.appendingPathComponent("pgbouncer.ini")
        var text = try String(contentsOf: file, encoding: .utf8)
        text = text.replacingOccurrences(of: "port=\(self.postgresPort)", with: "port=\(port)")
        try text.write(to: file, atomically: true, encoding: .utf8)
        self.postgresPort = port
        self.kill()
        try waitForPort(self.port, open: false)
        try self.startNow()
    }

    private func kill() {
        guard let process else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    /// The URL a service connects through as `user`, to the test Postgres's database.
    public func url(user: String) -> String {
        "postgres://\(user)@127.0.0.1:\(self.port)\(self.postgres.path)?sslmode=disable"
    }

    /// The log PgBouncer writes (for a failure's message).
    public var log: String {
        (try? String(contentsOf: self.directory.appendingPathComponent("pgbouncer.log"), encoding: .utf8)) ?? ""
    }

    /// Starts PgBouncer, waiting for its port on a thread of its own (``offPool(_:)``).
    public func start() async throws {
        try await offPool { try self.startNow() }
    }

    private func startNow() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/pgbouncer")
        process.arguments = (getuid() == 0 ? ["-u", "postgres"] : []) + [self.directory.appendingPathComponent("pgbouncer.ini").path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        try waitForPort(self.port)
    }

    deinit {
        self.kill()
        try? FileManager.default.removeItem(at: self.directory)
    }
}

public import Foundation
import SwarmdeckTools
import TestSupport

/// A real sshd of the test's own on a free loopback port (Debian's openssh-server), with a host
/// key of its own and one authorized key, and a tmux server on a socket name of its own. Both
/// stop with it.
public final class TestSSHD: @unchecked Sendable {
    public let directory: URL
    public let port: Int
    /// The broker's private key file (OpenSSH format); the harness authorizes a tenant's key
    /// derived from it.
    public let brokerKeyFile: URL
    /// The tmux server's socket name (`tmux -L`).
    public let tmuxSocket = "sdt-" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
    public let username: String
    /// The user the broker logs in as, when it is not this process's (its tmux server is that
    /// user's, reached through `setpriv`).
    public let loginUser: String?
    private var pid: pid_t?

    /// - Parameter loginUser: another user to log in as (this process must be root); by default
    ///   this process's user.
    public init(loginUser: String? = nil) throws {
        self.loginUser = loginUser
        self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("sshd-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        self.port = try freeLoopbackPort()
        self.brokerKeyFile = self.directory.appendingPathComponent("broker_ed25519")
        self.username = try loginUser ?? Spawn.output("/usr/bin/id", ["-un"]).trimmingCharacters(in: .whitespacesAndNewlines)
        try Spawn.run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "broker", "-f", self.brokerKeyFile.path])
        try self.newHostKey()
        // sshd's privilege separation directory.
        try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
    }

    /// A new host key (the next start presents it).
    public func newHostKey() throws {
        let key = self.directory.appendingPathComponent("host_ed25519")
        try? FileManager.default.removeItem(at: key)
        try? FileManager.default.removeItem(at: URL(fileURLWithPath: key.path + ".pub"))
        try Spawn.run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "host", "-f", key.path])
    }

    /// Makes `keyFile`'s public key the only authorized one.
    public func authorize(_ keyFile: URL) throws {
        try self.authorize(lines: [try String(contentsOfFile: keyFile.path + ".pub", encoding: .utf8)])
    }

    /// Makes these `authorized_keys` lines the only authorized keys.
    public func authorize(lines: [String]) throws {
        let text = lines.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: "\n") + "\n"
        try Data(text.utf8).write(to: self.directory.appendingPathComponent("authorized_keys"))
    }

    /// A key pair nobody authorized.
    public func strangerKey() throws -> URL {
        let key = self.directory.appendingPathComponent("stranger_\(UUID().uuidString.prefix(8))")
        try Spawn.run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "stranger", "-f", key.path])
        return key
    }

    public func start() throws {
        let config = """
            Port \(self.port)
            ListenAddress 127.0.0.1
            HostKey \(self.directory.path)/host_ed25519
            AuthorizedKeysFile \(self.directory.path)/authorized_keys
            PidFile \(self.directory.path)/sshd.pid
            PubkeyAuthentication yes
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            UsePAM no
            StrictModes no
            PermitRootLogin prohibit-password
            LogLevel ERROR
            """
        let file = self.directory.appendingPathComponent("sshd_config")
        try Data(config.utf8).write(to: file)
        // A restart on the same port can find it briefly unavailable: sshd then exits at once.
        var attempt = 0
        while true {
            let pid = try Spawn.start(
                "/usr/sbin/sshd",
                ["-D", "-e", "-f", file.path],
                output: "/dev/null",
                errors: self.directory.appendingPathComponent("sshd.log").path
            )
            do {
                try waitForPort(self.port, timeout: 5)
                self.pid = pid
                return
            } catch {
                kill(pid, SIGKILL)
                Spawn.reap(pid)
                attempt += 1
                if attempt == 3 {
                    let log = (try? String(contentsOf: self.directory.appendingPathComponent("sshd.log"), encoding: .utf8)) ?? ""
                    throw HarnessError(message: "sshd did not listen on port \(self.port) in 3 tries (\(error)); its log: \(log.suffix(2000))")
                }
            }
        }
    }

    /// Stops the listener and every connection it accepted (a host going down). SIGKILL: the
    /// test process ignores SIGTERM (ServiceLifecycle's signal handling), and its children
    /// inherit that.
    public func stop() {
        guard let pid = self.pid else { return }
        _ = try? Spawn.output("/usr/bin/pkill", ["-KILL", "-P", String(pid)])
        kill(pid, SIGKILL)
        Spawn.reap(pid)
        self.pid = nil
        try? waitForPort(self.port, open: false)
    }

    // MARK: tmux

    /// `tmux -L <socket> ARGS…` as the login user, its standard output.
    @discardableResult
    public func tmux(_ arguments: [String]) throws -> String {
        guard let user = self.loginUser else { return try Spawn.output("/usr/bin/tmux", ["-L", self.tmuxSocket] + arguments) }
        return try Spawn.output(
            "/usr/bin/setpriv",
            ["--reuid", user, "--regid", user, "--init-groups", "/usr/bin/tmux", "-L", self.tmuxSocket] + arguments
        )
    }

    /// A detached session running `command` in an 80×24 window.
    public func newSession(_ name: String, command: String = "bash --norc --noprofile") async throws {
        try await offPool {
            try self.tmux(["new-session", "-d", "-s", name, "-x", "80", "-y", "24", command])
            try self.tmux(["set-option", "-t", name, "status", "off"])
        }
    }

    /// What the session's pane shows.
    public func capture(_ name: String) async throws -> String {
        try await offPool { try self.tmux(["capture-pane", "-p", "-t", "=\(name):"]) }
    }

    /// `WIDTHxHEIGHT` of the session's window.
    public func windowSize(_ name: String) async throws -> String {
        try await offPool {
            try self.tmux(["display-message", "-p", "-t", "=\(name):", "#{window_width}x#{window_height}"]).trimmingCharacters(
                in: .whitespacesAndNewlines
            )
        }
    }

    /// Clients attached to the session.
    public func clients(_ name: String) async throws -> [String] {
        try await offPool {
            try self.tmux(["list-clients", "-t", "=\(name)", "-F", "#{client_name} #{client_flags}"]).split(separator: "\n").map(String.init)
        }
    }

    /// Types `text` into the session (as if at its keyboard), then Enter.
    public func type(_ name: String, _ text: String) async throws {
        try await offPool {
            try self.tmux(["send-keys", "-t", "=\(name):", "-l", text])
            try self.tmux(["send-keys", "-t", "=\(name):", "Enter"])
        }
    }

    deinit {
        self.stop()
        _ = try? self.tmux(["kill-server"])
        try? FileManager.default.removeItem(at: self.directory)
    }
}

import Contracts
import Crypto
import Logging
import NIOCore
import ServiceKit

/// One SSH connection per host, opened on demand and shared by every command and attach on it.
/// A host that failed is not tried again before its backoff (1 s, doubling up to
/// `terminal.max-backoff-seconds`): until then requests get its last error at once.
actor SSHHostPool {
    struct Key: Hashable, Sendable {
        var tenant: String
        var hostID: String
        var endpoint: SSHEndpoint
    }

    private struct Failure {
        var error: APIError
        var until: ContinuousClock.Instant
        var backoff: Duration
    }

    private let key: Curve25519.Signing.PrivateKey
    private let store: HostStore
    private let group: any EventLoopGroup
    private let timeout: Duration
    private let maxBackoff: Duration
    private let logger: Logger
    private var connections: [Key: SSHConnection] = [:]
    private var connecting: [Key: Task<SSHConnection, any Error>] = [:]
    private var failures: [Key: Failure] = [:]

    init(key: Curve25519.Signing.PrivateKey, store: HostStore, group: any EventLoopGroup, timeout: Duration, maxBackoff: Duration, logger: Logger) {
        self.key = key
        self.store = store
        self.group = group
        self.timeout = timeout
        self.maxBackoff = maxBackoff
        self.logger = logger
    }

    /// The host's connection, opened if need be.
    func connection(to host: TerminalHost, tenant: String) async throws -> SSHConnection {
        let key = Key(tenant: tenant, hostID: host.hostId, endpoint: host.endpoint)
        if let connection = self.connections[key] {
            if connection.isActive { return connection }
            self.connections[key] = nil
        }
        if let failure = self.failures[key], ContinuousClock.now < failure.until {
            let wait = failure.until - ContinuousClock.now
            throw APIError(failure.error.code, failure.error.message, retryAfterSeconds: max(1, Int(wait.components.seconds) + 1))
        }
        let task: Task<SSHConnection, any Error>
        if let running = self.connecting[key] {
            task = running
        } else {
            let store = self.store
            task = Task { [privateKey = self.key, group = self.group, timeout = self.timeout] in
                try await SSHConnection.connect(
                    to: host.endpoint,
                    key: privateKey,
                    checkHostKey: { presented in
                        do {
                            return try await store.check(hostKey: presented, host: host, tenant: tenant)
                        } catch {
                            return .unknown
                        }
                    },
                    group: group,
                    timeout: timeout
                )
            }
            self.connecting[key] = task
        }
        do {
            let connection = try await task.value
            self.connecting[key] = nil
            self.connections[key] = connection
            self.failures[key] = nil
            return connection
        } catch {
            self.connecting[key] = nil
            let failure = error as? APIError ?? APIError(.sshHostUnreachable, "\(error)")
            let backoff = min(self.maxBackoff, (self.failures[key]?.backoff ?? .milliseconds(500)) * 2)
            self.failures[key] = Failure(error: failure, until: .now + backoff, backoff: backoff)
            self.logger.notice(
                "ssh connection failed",
                metadata: ["host": "\(host.hostId)", "error": "\(failure.code.rawValue)", "backoff": "\(backoff)"]
            )
            throw failure
        }
    }

    /// Closes the host's connections and forgets its failures (after its trust was reset or it
    /// was removed).
    func forget(hostID: String, tenant: String) {
        for key in self.connections.keys where key.hostID == hostID && key.tenant == tenant {
            self.connections.removeValue(forKey: key)?.close()
        }
        for key in self.failures.keys where key.hostID == hostID && key.tenant == tenant {
            self.failures[key] = nil
        }
    }

    /// Closes every connection.
    func shutdown() {
        for connection in self.connections.values { connection.close() }
        self.connections = [:]
    }
}

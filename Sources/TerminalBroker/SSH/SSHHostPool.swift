import Contracts
import Crypto
import Logging
import NIOCore
import ServiceKit

/// One SSH connection per host and tenant, opened on demand and shared by every command and
/// attach on it, logged in with that tenant's key (``TenantSSHKeys``). The host's name is
/// resolved first and the connection goes to an address ``AddressPolicy`` allows (public, or in
/// `terminal.allowed-networks`). A host that failed is not tried again before its backoff (1 s,
/// doubling up to `terminal.max-backoff-seconds`): until then requests get its last error at
/// once. Every failure to reach an SSH server (refused, timed out, not SSH) is the same
/// `SSHHostUnreachable`, so the broker cannot be used to tell open ports from closed ones.
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

    private let keys: TenantSSHKeys
    private let policy: AddressPolicy
    private let store: HostStore
    private let group: any EventLoopGroup
    private let timeout: Duration
    private let maxBackoff: Duration
    private let logger: Logger
    private var connections: [Key: SSHConnection] = [:]
    private var connecting: [Key: Task<SSHConnection, any Error>] = [:]
    private var failures: [Key: Failure] = [:]

    init(
        keys: TenantSSHKeys,
        policy: AddressPolicy,
        store: HostStore,
        group: any EventLoopGroup,
        timeout: Duration,
        maxBackoff: Duration,
        logger: Logger
    ) {
        self.keys = keys
        self.policy = policy
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
            task = Task { [keys = self.keys, policy = self.policy, group = self.group, timeout = self.timeout] in
                // Each address the policy allows, in the resolver's order, until one answers (at
                // most three, each with its own timeout).
                let addresses = try await Self.addresses(of: host, policy: policy).prefix(3)
                var lastError: any Error = AddressRefused(reason: "\(host.address) has no address")
                for address in addresses {
                    do {
                        return try await Self.connect(host, at: address, tenant: tenant, keys: keys, store: store, group: group, timeout: timeout)
                    } catch let error as APIError where error.code == .sshHostUnreachable {
                        lastError = error
                    }
                }
                throw lastError
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
            // The detail stays in the log; callers learn only that no SSH server answered.
            let failure: APIError
            switch error {
            case is AddressRefused:
                // One message whether the name did not resolve or resolved only to refused
                // addresses: the broker is no way to look up the service network's names.
                failure = APIError(
                    .sshHostUnreachable,
                    "\(host.address) does not resolve to an address the broker may reach (public, or in terminal.allowed-networks)",
                    retryAfterSeconds: 5
                )
            case let error as APIError where error.code != .sshHostUnreachable:
                failure = error
            default:
                failure = APIError(.sshHostUnreachable, "no SSH server answered at \(host.address):\(host.port)", retryAfterSeconds: 5)
            }
            let backoff = min(self.maxBackoff, (self.failures[key]?.backoff ?? .milliseconds(500)) * 2)
            self.failures[key] = Failure(error: failure, until: .now + backoff, backoff: backoff)
            self.logger.notice(
                "ssh connection failed",
                metadata: [
                    "host": "\(host.hostId)", "error": "\(failure.code.rawValue)",
                    "detail": "\((error as? AddressRefused)?.reason ?? SSHConnection.describe(error))",
                    "backoff": "\(backoff)",
                ]
            )
            throw failure
        }
    }

    /// The addresses the host's name resolves to that the policy allows, in order (none:
    /// ``AddressRefused``, whose reason only the log shows).
    static func addresses(of host: TerminalHost, policy: AddressPolicy) async throws -> [String] {
        let addresses: [String]
        do {
            addresses = try await AddressPolicy.resolve(host.address)
        } catch {
            throw AddressRefused(reason: "\(host.address) did not resolve")
        }
        var allowed: [String] = []
        for address in addresses where policy.refusal(address) == nil && !allowed.contains(address) { allowed.append(address) }
        guard !allowed.isEmpty else {
            throw AddressRefused(reason: addresses.first.flatMap { policy.refusal($0) } ?? "\(host.address) has no address")
        }
        return allowed
    }

    /// One connection attempt to `address`, pinning or checking the host's key.
    private static func connect(
        _ host: TerminalHost,
        at address: String,
        tenant: String,
        keys: TenantSSHKeys,
        store: HostStore,
        group: any EventLoopGroup,
        timeout: Duration
    ) async throws -> SSHConnection {
        try await SSHConnection.connect(
            to: host.endpoint,
            at: address,
            key: keys.privateKey(tenant: tenant),
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

    /// Every address a host's name resolves to is one the policy refuses.
    struct AddressRefused: Error {
        var reason: String
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

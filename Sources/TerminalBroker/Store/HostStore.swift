import Contracts
import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// Hosts, their pinned keys and the audit trail, in terminal-broker's schema. Every read and
/// write is keyed by the caller's tenant: another tenant's host answers as if it did not exist.
struct HostStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    private static let columns = "host_id, name, address, port, username, tmux_socket, created_at"

    private static func host(_ row: PostgresRow) throws -> TerminalHost {
        let (id, name, address, port, username, socket, created) = try row.decode((String, String, String, Int, String, String?, Date).self)
        return TerminalHost(hostId: id, name: name, address: address, port: port, username: username, tmuxSocket: socket, createdAt: created)
    }

    /// Registers a host for `tenant`; `Conflict` when the name is taken or the tenant has
    /// `maxHosts` already.
    func register(_ registration: HostRegistration, tenant: String, actor: String, maxHosts: Int) async throws -> TerminalHost {
        let hostID = "h_" + randomHex(bytes: 8)
        let port = registration.port ?? 22
        return try await self.client.transaction(logger: self.logger) { connection in
            try await connection.perform("SELECT pg_advisory_xact_lock(hashtext('terminal.hosts'), hashtext(\(tenant)))", logger: self.logger)
            for try await count in try await connection.query("SELECT count(*) FROM hosts WHERE tenant_id = \(tenant)", logger: self.logger).decode(
                Int.self
            )
            where count >= maxHosts {
                throw APIError(.conflict, "this tenant has \(maxHosts) hosts registered already (terminal.max-hosts-per-tenant)")
            }
            let rows = try await connection.query(
                """
                INSERT INTO hosts (tenant_id, host_id, name, address, port, username, tmux_socket, created_by)
                VALUES (\(tenant), \(hostID), \(registration.name), \(registration.address), \(port), \(registration.username),
                        \(registration.tmuxSocket), \(actor))
                ON CONFLICT (tenant_id, name) DO NOTHING
                RETURNING \(unescaped: Self.columns)
                """,
                logger: self.logger
            )
            for try await row in rows {
                let host = try Self.host(row)
                try await Self.audit(
                    connection,
                    tenant: tenant,
                    actor: actor,
                    action: "host.register",
                    host: host.hostId,
                    detail: "\(host.username)@\(host.address):\(host.port)",
                    logger: self.logger
                )
                return host
            }
            throw APIError(.conflict, "a host named \(registration.name) is registered already")
        }
    }

    func list(tenant: String) async throws -> [TerminalHost] {
        let rows = try await self.client.query(
            "SELECT \(unescaped: Self.columns) FROM hosts WHERE tenant_id = \(tenant) ORDER BY name",
            logger: self.logger
        )
        var hosts: [TerminalHost] = []
        for try await row in rows { hosts.append(try Self.host(row)) }
        return hosts
    }

    func host(_ hostID: String, tenant: String) async throws -> TerminalHost? {
        let rows = try await self.client.query(
            "SELECT \(unescaped: Self.columns) FROM hosts WHERE tenant_id = \(tenant) AND host_id = \(hostID)",
            logger: self.logger
        )
        for try await row in rows { return try Self.host(row) }
        return nil
    }

    /// Removes a host and its pinned keys; false when there was none.
    func remove(_ hostID: String, tenant: String, actor: String) async throws -> Bool {
        try await self.client.transaction(logger: self.logger) { connection in
            let rows = try await connection.query(
                "DELETE FROM hosts WHERE tenant_id = \(tenant) AND host_id = \(hostID) RETURNING host_id",
                logger: self.logger
            )
            var removed = false
            for try await _ in rows { removed = true }
            if removed { try await Self.audit(connection, tenant: tenant, actor: actor, action: "host.remove", host: hostID, logger: self.logger) }
            return removed
        }
    }

    /// Trust on first use: pins `key` for the host's address and port when none is pinned;
    /// otherwise compares. A mismatch is audited.
    func check(hostKey key: String, host: TerminalHost, tenant: String) async throws -> HostKeyVerdict {
        try await self.client.transaction(logger: self.logger) { connection in
            try await connection.query(
                """
                INSERT INTO host_keys (tenant_id, host_id, address, port, public_key)
                VALUES (\(tenant), \(host.hostId), \(host.address), \(host.port), \(key))
                ON CONFLICT DO NOTHING
                """,
                logger: self.logger
            )
            let rows = try await connection.query(
                "SELECT public_key FROM host_keys WHERE tenant_id = \(tenant) AND host_id = \(host.hostId) AND address = \(host.address) AND port = \(host.port)",
                logger: self.logger
            )
            for try await pinned in rows.decode(String.self) where pinned == key { return .trusted }
            try await Self.audit(
                connection,
                tenant: tenant,
                actor: "broker",
                action: "hostkey.mismatch",
                host: host.hostId,
                detail: key,
                logger: self.logger
            )
            return .mismatch
        }
    }

    /// The key pinned for the host's current address and port, if any.
    func pinnedKey(host: TerminalHost, tenant: String) async throws -> String? {
        let rows = try await self.client.query(
            "SELECT public_key FROM host_keys WHERE tenant_id = \(tenant) AND host_id = \(host.hostId) AND address = \(host.address) AND port = \(host.port)",
            logger: self.logger
        )
        for try await key in rows.decode(String.self) { return key }
        return nil
    }

    /// Forgets the host's pinned keys (the next connection pins again), audited.
    func resetTrust(_ hostID: String, tenant: String, actor: String) async throws -> Bool {
        try await self.client.transaction(logger: self.logger) { connection in
            let exists = try await connection.query("SELECT 1 FROM hosts WHERE tenant_id = \(tenant) AND host_id = \(hostID)", logger: self.logger)
            var found = false
            for try await _ in exists { found = true }
            guard found else { return false }
            try await connection.query("DELETE FROM host_keys WHERE tenant_id = \(tenant) AND host_id = \(hostID)", logger: self.logger)
            try await Self.audit(connection, tenant: tenant, actor: actor, action: "hostkey.reset", host: hostID, logger: self.logger)
            return true
        }
    }

    /// Records an attach that is not being recorded, and why.
    func auditUnrecordedAttach(tenant: String, actor: String, host: String, session: String, reason: String) async throws {
        try await self.client.transaction(logger: self.logger) { connection in
            try await Self.audit(
                connection,
                tenant: tenant,
                actor: actor,
                action: "attach.unrecorded",
                host: host,
                session: session,
                detail: String(reason.prefix(500)),
                logger: self.logger
            )
        }
    }

    /// Records an attach with input enabled.
    func auditInputAttach(tenant: String, actor: String, host: String, session: String) async throws {
        try await self.client.transaction(logger: self.logger) { connection in
            try await Self.audit(connection, tenant: tenant, actor: actor, action: "attach.input", host: host, session: session, logger: self.logger)
        }
    }

    /// One audit entry.
    struct AuditEntry: Sendable, Codable, Equatable {
        var at: Date
        var actor: String
        var action: String
        var hostId: String?
        var sessionName: String?
        var detail: String?
    }

    /// The tenant's newest audit entries.
    func audit(tenant: String, limit: Int) async throws -> [AuditEntry] {
        let rows = try await self.client.query(
            "SELECT at, actor, action, host_id, session_name, detail FROM audit WHERE tenant_id = \(tenant) ORDER BY id DESC LIMIT \(limit)",
            logger: self.logger
        )
        var entries: [AuditEntry] = []
        for try await (at, actor, action, host, session, detail) in rows.decode((Date, String, String, String?, String?, String?).self) {
            entries.append(AuditEntry(at: at, actor: actor, action: action, hostId: host, sessionName: session, detail: detail))
        }
        return entries
    }

    private static func audit(
        _ connection: PostgresConnection,
        tenant: String,
        actor: String,
        action: String,
        host: String?,
        session: String? = nil,
        detail: String? = nil,
        logger: Logger
    ) async throws {
        try await connection.query(
            "INSERT INTO audit (tenant_id, actor, action, host_id, session_name, detail) VALUES (\(tenant), \(actor), \(action), \(host), \(session), \(detail))",
            logger: logger
        )
    }
}

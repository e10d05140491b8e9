import Contracts
import Foundation
import OpenAPIRuntime
import ServiceKit
import TerminalBrokerContract

/// terminal-broker's HTTP operations (the `APIProtocol` generated from
/// openapi/terminal-broker.yaml): hosts and the audit trail for administrators, sessions for
/// phones, recordings for writers. The attach WebSocket is ``TerminalController``.
struct TerminalHandler: Sendable {
    let store: HostStore
    let pool: SSHHostPool
    let recordings: TerminalRecordings
    let settings: TerminalSettings
    let keys: TenantSSHKeys
}

extension TerminalHandler: APIProtocol {
    func getTerminalSSHKey(_ input: Operations.GetTerminalSSHKey.Input) async throws -> Operations.GetTerminalSSHKey.Output {
        let person = try Caller.person()
        return .ok(
            .init(
                body: .json(
                    .init(publicKey: self.keys.publicKeyLine(tenant: person.tenant), fingerprint: self.keys.fingerprint(tenant: person.tenant))
                )
            )
        )
    }

    func registerTerminalHost(_ input: Operations.RegisterTerminalHost.Input) async throws -> Operations.RegisterTerminalHost.Output {
        let person = try Caller.person()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        let registration = try HostRegistration(
            name: body.name,
            address: body.address,
            port: body.port,
            username: body.username,
            tmuxSocket: body.tmuxSocket
        ).validated()
        // A numeric address is judged now; a name, each time it is resolved.
        if AddressPolicy.ipv4(registration.address) ?? AddressPolicy.ipv6(registration.address) != nil,
            let refusal = self.settings.addressPolicy.refusal(registration.address)
        {
            throw APIError(
                .invalidRequest,
                "the broker may not reach \(refusal); an operator allows networks with terminal.allowed-networks",
                details: ["address": "a public address, or one in terminal.allowed-networks"]
            )
        }
        let host = try await self.store.register(
            registration,
            tenant: person.tenant,
            actor: person.subject,
            maxHosts: self.settings.maxHostsPerTenant
        )
        return .created(.init(body: .json(Self.contract(host))))
    }

    func listTerminalHosts(_ input: Operations.ListTerminalHosts.Input) async throws -> Operations.ListTerminalHosts.Output {
        let person = try Caller.person()
        guard input.query.listing == true else {
            return .ok(.init(body: .json(.init(hosts: try await self.store.list(tenant: person.tenant).map { Self.contract($0) }))))
        }
        let listed = try await self.listSessions(tenant: person.tenant)
        return .ok(.init(body: .json(.init(hosts: listed.map { Self.contract($0.host, listing: $0.listing) }))))
    }

    func removeTerminalHost(_ input: Operations.RemoveTerminalHost.Input) async throws -> Operations.RemoveTerminalHost.Output {
        try await self.changeHost(input.path.hostId) { try await self.store.remove($0, tenant: $1.tenant, actor: $1.subject) }
        return .noContent(.init())
    }

    func getTerminalHostKey(_ input: Operations.GetTerminalHostKey.Input) async throws -> Operations.GetTerminalHostKey.Output {
        let person = try Caller.person()
        let host = try await self.store.requireHost(input.path.hostId, tenant: person.tenant)
        let key = try await self.store.pinnedKey(host: host, tenant: person.tenant)
        return .ok(.init(body: .json(.init(hostId: host.hostId, pinnedKey: key))))
    }

    func resetTerminalHostTrust(_ input: Operations.ResetTerminalHostTrust.Input) async throws -> Operations.ResetTerminalHostTrust.Output {
        try await self.changeHost(input.path.hostId) { try await self.store.resetTrust($0, tenant: $1.tenant, actor: $1.subject) }
        return .noContent(.init())
    }

    func listTerminalAudit(_ input: Operations.ListTerminalAudit.Input) async throws -> Operations.ListTerminalAudit.Output {
        let person = try Caller.person()
        let limit = input.query.limit ?? 100
        try InputCheck.range(limit, "limit", 1...1000)
        let entries = try await self.store.audit(tenant: person.tenant, limit: limit).map {
            Components.Schemas.AuditEntry(
                at: $0.at,
                actor: $0.actor,
                action: $0.action,
                hostId: $0.hostId,
                sessionName: $0.sessionName,
                detail: $0.detail
            )
        }
        return .ok(.init(body: .json(.init(entries: entries))))
    }

    func listTerminalSessions(_ input: Operations.ListTerminalSessions.Input) async throws -> Operations.ListTerminalSessions.Output {
        let person = try Caller.person()
        return .ok(.init(body: .json(try await self.listSessions(tenant: person.tenant).flatMap(\.sessions))))
    }

    func getTerminalSession(_ input: Operations.GetTerminalSession.Input) async throws -> Operations.GetTerminalSession.Output {
        let person = try Caller.person()
        let (id, host) = try await self.store.requireSession(input.path.sessionId, tenant: person.tenant)
        guard let session = try await self.pool.sessions(on: host, tenant: person.tenant).first(where: { $0.name == id.name }) else {
            throw APIError(.tmuxSessionNotFound, "no tmux session \(id.name) on \(host.name)")
        }
        return .ok(.init(body: .json(Self.contract(session, on: host, detailed: true))))
    }

    func listTerminalRecordings(_ input: Operations.ListTerminalRecordings.Input) async throws -> Operations.ListTerminalRecordings.Output {
        let person = try Caller.person()
        let (id, _) = try await self.store.requireSession(input.path.sessionId, tenant: person.tenant)
        let recordings = self.recordings.list(tenant: person.tenant, session: id).map {
            Components.Schemas.Recording(recordingId: $0.recordingId, startedAt: $0.startedAt, bytes: $0.bytes)
        }
        return .ok(.init(body: .json(.init(recordings: recordings))))
    }

    func getTerminalRecording(_ input: Operations.GetTerminalRecording.Input) async throws -> Operations.GetTerminalRecording.Output {
        let person = try Caller.person()
        let (id, _) = try await self.store.requireSession(input.path.sessionId, tenant: person.tenant)
        let file = try self.recordings.open(tenant: person.tenant, session: id, id: input.path.recordingId)
        return .ok(.init(body: .applicationXAsciicast(HTTPBody(file, length: .known(Int64(file.size)), iterationBehavior: .single))))
    }
}

extension TerminalHandler {
    /// Applies `change` (a removal, a trust reset) to the caller's host `hostID`, then drops the
    /// host's connection so the next use sees the change; `NotFound` when `change` found no host.
    private func changeHost(_ hostID: String, _ change: (String, AccessIdentity) async throws -> Bool) async throws {
        let person = try Caller.person()
        guard try await change(hostID, person) else { throw HostStore.noHost }
        await self.pool.forget(hostID: hostID, tenant: person.tenant)
    }

    /// One host's sessions as listed now, and how its listing went.
    struct HostSessions: Sendable {
        var host: TerminalHost
        var sessions: [Components.Schemas.TerminalSession]
        var listing: Components.Schemas.HostListing
    }

    /// Every host's sessions, listed in parallel, host by host in the store's order; a host
    /// that fails is reported with its error and the others are listed all the same.
    func listSessions(tenant: String) async throws -> [HostSessions] {
        let hosts = try await self.store.list(tenant: tenant)
        return await withTaskGroup(of: (Int, HostSessions).self) { group in
            for (index, host) in hosts.enumerated() {
                group.addTask {
                    do {
                        let sessions = try await self.pool.sessions(on: host, tenant: tenant)
                        return (index, HostSessions(host: host, sessions: sessions.map { Self.contract($0, on: host) }, listing: .init(status: .ok)))
                    } catch {
                        let failure = error as? APIError ?? APIError(.terminalInitFailed, "\(error)")
                        let listing = Components.Schemas.HostListing(
                            status: .error,
                            error: .init(code: failure.code.rawValue, message: failure.message)
                        )
                        return (index, HostSessions(host: host, sessions: [], listing: listing))
                    }
                }
            }
            var results: [(Int, HostSessions)] = []
            for await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    static func contract(_ host: TerminalHost, listing: Components.Schemas.HostListing? = nil) -> Components.Schemas.TerminalHost {
        Components.Schemas.TerminalHost(
            hostId: host.hostId,
            name: host.name,
            address: host.address,
            port: host.port,
            username: host.username,
            tmuxSocket: host.tmuxSocket,
            createdAt: host.createdAt,
            listing: listing
        )
    }

    /// One tmux session as the phone lists it (seed 002 §13.2's fields, plus its state);
    /// `detailed` adds how a direct client authenticates.
    static func contract(_ session: TmuxCommandLine.Session, on host: TerminalHost, detailed: Bool = false) -> Components.Schemas.TerminalSession {
        Components.Schemas.TerminalSession(
            sessionId: TerminalSessionID(hostID: host.hostId, name: session.name).description,
            displayName: "\(session.name) on \(host.name)",
            hostId: host.hostId,
            hostnameOrIP: host.address,
            port: host.port,
            username: host.username,
            tmuxSessionName: session.name,
            agentId: session.agentID,
            swarmId: session.swarmID,
            status: session.attachedClients > 0 ? .attached : .detached,
            attachedClients: session.attachedClients,
            cols: session.cols,
            rows: session.rows,
            createdAt: session.created,
            lastActivity: session.lastActivity,
            authMode: detailed ? .publicKey : nil
        )
    }
}

import ServiceKit

extension HostStore {
    static let noHost = APIError(.notFound, "no such host")
    static let noSession = APIError(.notFound, "no such terminal session")

    /// The tenant's host `hostID`; `NotFound` for another tenant's or none.
    func requireHost(_ hostID: String, tenant: String) async throws -> TerminalHost {
        guard hostID.utf8.count <= 64, let host = try await self.host(hostID, tenant: tenant) else { throw Self.noHost }
        return host
    }

    /// The session id `text` names and its host, when the host is the tenant's; `NotFound` else.
    /// (Whether the host has that session is for tmux to say.)
    func requireSession(_ text: String, tenant: String) async throws -> (TerminalSessionID, TerminalHost) {
        guard let id = TerminalSessionID(text), let host = try await self.host(id.hostID, tenant: tenant) else { throw Self.noSession }
        return (id, host)
    }
}

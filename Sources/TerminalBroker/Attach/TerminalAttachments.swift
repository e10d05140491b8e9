import Contracts
import Logging
import ServiceKit

/// The sessions attached on this replica, one ``TerminalAttachment`` per session however many
/// phones watch it, at most `terminal.max-attaches-per-tenant` per tenant.
actor TerminalAttachments {
    private struct Key: Hashable {
        var tenant: String
        var id: TerminalSessionID
    }

    private var open: [Key: TerminalAttachment] = [:]
    private var opening: [Key: Task<TerminalAttachment, any Error>] = [:]
    private let pool: SSHHostPool
    private let replayBytes: Int
    private let maxViewers: Int
    private let recordings: TerminalRecordings
    private let maxPerTenant: Int
    private let logger: Logger

    init(pool: SSHHostPool, replayBytes: Int, maxViewers: Int, recordings: TerminalRecordings, maxPerTenant: Int, logger: Logger) {
        self.pool = pool
        self.replayBytes = replayBytes
        self.maxViewers = maxViewers
        self.recordings = recordings
        self.maxPerTenant = maxPerTenant
        self.logger = logger
    }

    /// The session's attachment, attaching it first if no viewer on this replica has.
    func attachment(_ id: TerminalSessionID, host: TerminalHost, tenant: String) async throws -> TerminalAttachment {
        let key = Key(tenant: tenant, id: id)
        if let attachment = self.open[key] {
            if !attachment.isEnded { return attachment }
            self.open[key] = nil
        }
        let task: Task<TerminalAttachment, any Error>
        if let running = self.opening[key] {
            task = running
        } else {
            let attached = self.open.keys.filter { $0.tenant == tenant }.count + self.opening.keys.filter { $0.tenant == tenant }.count
            guard attached < self.maxPerTenant else {
                throw APIError(
                    .rateLimited,
                    "this tenant has \(self.maxPerTenant) sessions attached on this server (terminal.max-attaches-per-tenant)",
                    retryAfterSeconds: 5
                )
            }
            task = Task {
                [pool = self.pool, replayBytes = self.replayBytes, maxViewers = self.maxViewers, recordings = self.recordings, logger = self.logger]
                in
                let connection = try await pool.connection(to: host, tenant: tenant)
                return try await TerminalAttachment.open(
                    id,
                    tenant: tenant,
                    host: host,
                    connection: connection,
                    replayBytes: replayBytes,
                    maxViewers: maxViewers,
                    recordings: recordings,
                    logger: logger,
                    onEnd: { attachment in Task { await self.ended(attachment) } }
                )
            }
            self.opening[key] = task
        }
        do {
            let attachment = try await task.value
            if self.opening[key] == task {
                self.opening[key] = nil
                if !attachment.isEnded { self.open[key] = attachment }
            }
            return attachment
        } catch {
            if self.opening[key] == task { self.opening[key] = nil }
            throw error
        }
    }

    /// Sessions attached now, for a tenant.
    func count(tenant: String) -> Int { self.open.keys.filter { $0.tenant == tenant }.count }

    private func ended(_ attachment: TerminalAttachment) {
        let key = Key(tenant: attachment.tenant, id: attachment.id)
        if self.open[key] === attachment { self.open[key] = nil }
    }

    /// Detaches everything (the broker is stopping).
    func closeAll() {
        for attachment in self.open.values {
            attachment.close(APIError(.serviceUnavailable, "the terminal broker is stopping", retryAfterSeconds: 1))
        }
        self.open = [:]
    }
}

import Contracts
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOWebSocket
import ServiceKit

/// terminal-broker's HTTP edge: hosts (administrators), sessions (`terminal:attach`), the
/// audit trail, and the attach WebSocket.
struct TerminalController: Sendable {
    let store: HostStore
    let pool: SSHHostPool
    let attachments: TerminalAttachments
    let recordings: TerminalRecordings
    let verifier: AccessTokenVerifier
    let authentication: WebSocketAuthentication
    let heartbeats: WebSocketHeartbeats
    let settings: TerminalSettings
    let logger: Logger
    private let viewerIDs = NIOLockedValueBox(0)

    init(
        store: HostStore,
        pool: SSHHostPool,
        attachments: TerminalAttachments,
        recordings: TerminalRecordings,
        verifier: AccessTokenVerifier,
        heartbeats: WebSocketHeartbeats,
        settings: TerminalSettings,
        logger: Logger
    ) {
        self.store = store
        self.pool = pool
        self.attachments = attachments
        self.recordings = recordings
        self.verifier = verifier
        self.authentication = WebSocketAuthentication(verifier: verifier, requiring: .terminalAttach)
        self.heartbeats = heartbeats
        self.settings = settings
        self.logger = logger
    }

    func addRoutes(to router: Router<ServiceRequestContext>) {
        let hosts = router.group("v1/terminal/hosts").add(middleware: AuthenticationMiddleware(verifier: self.verifier, requiring: .admin))
        hosts.post { request, context -> EditedResponse<TerminalHost> in
            let identity = try context.requireIdentity()
            let registration = try await request.decodeJSON(HostRegistration.self, upTo: 16 << 10, shape: HostRegistration.shape).validated()
            let host = try await self.store.register(
                registration,
                tenant: identity.tenant,
                actor: identity.subject,
                maxHosts: self.settings.maxHostsPerTenant
            )
            return EditedResponse(status: .created, response: host)
        }
        hosts.get { _, context in
            HostList(hosts: try await self.store.list(tenant: context.requireIdentity().tenant))
        }
        hosts.get(":hostId/key") { _, context -> HostKeyInfo in
            let identity = try context.requireIdentity()
            let host = try await self.host(context.parameters.require("hostId"), tenant: identity.tenant)
            return HostKeyInfo(hostId: host.hostId, pinnedKey: try await self.store.pinnedKey(host: host, tenant: identity.tenant))
        }
        hosts.delete(":hostId") { _, context -> HTTPResponse.Status in
            let identity = try context.requireIdentity()
            let hostID = try context.parameters.require("hostId")
            guard try await self.store.remove(hostID, tenant: identity.tenant, actor: identity.subject) else { throw Self.noHost }
            await self.pool.forget(hostID: hostID, tenant: identity.tenant)
            return .noContent
        }
        hosts.post(":hostId/trust-reset") { _, context -> HTTPResponse.Status in
            let identity = try context.requireIdentity()
            let hostID = try context.parameters.require("hostId")
            guard try await self.store.resetTrust(hostID, tenant: identity.tenant, actor: identity.subject) else { throw Self.noHost }
            await self.pool.forget(hostID: hostID, tenant: identity.tenant)
            return .noContent
        }
        router.group("v1/terminal/audit").add(middleware: AuthenticationMiddleware(verifier: self.verifier, requiring: .admin)).get {
            request,
            context in
            let limit = request.uri.queryParameters["limit"].flatMap { Int($0) } ?? 100
            try InputCheck.range(limit, "limit", 1...1000)
            return AuditList(entries: try await self.store.audit(tenant: context.requireIdentity().tenant, limit: limit))
        }

        let sessions = router.group("v1/terminal/sessions").add(
            middleware: AuthenticationMiddleware(verifier: self.verifier, requiring: .terminalAttach, .admin)
        )
        sessions.get { _, context in
            try await self.listSessions(tenant: context.requireIdentity().tenant)
        }
        sessions.get(":sessionId") { _, context -> TerminalSessionInfo in
            let identity = try context.requireIdentity()
            let (id, host) = try await self.session(context.parameters.require("sessionId"), tenant: identity.tenant)
            let found = try await self.sessions(on: host, tenant: identity.tenant)
            guard let session = found.first(where: { $0.name == id.name }) else {
                throw APIError(.tmuxSessionNotFound, "no tmux session \(id.name) on \(host.name)")
            }
            return TerminalSessionInfo(host: host, session: session, detailed: true)
        }
        // Recordings hold what was typed: writers and administrators only.
        let recordings = router.group("v1/terminal/sessions").add(
            middleware: AuthenticationMiddleware(verifier: self.verifier, requiring: .terminalWrite, .admin)
        )
        recordings.get(":sessionId/recordings") { _, context -> RecordingList in
            let identity = try context.requireIdentity()
            let (id, _) = try await self.session(context.parameters.require("sessionId"), tenant: identity.tenant)
            return RecordingList(recordings: self.recordings.list(tenant: identity.tenant, session: id))
        }
        recordings.get(":sessionId/recordings/:recordingId") { _, context -> Response in
            let identity = try context.requireIdentity()
            let (id, _) = try await self.session(context.parameters.require("sessionId"), tenant: identity.tenant)
            let data = try self.recordings.read(tenant: identity.tenant, session: id, id: try context.parameters.require("recordingId"))
            return Response(
                status: .ok,
                headers: [.contentType: "application/x-asciicast"],
                body: .init(byteBuffer: ByteBuffer(bytes: data))
            )
        }
    }

    static let noHost = APIError(.notFound, "no such host")
    static let noSession = APIError(.notFound, "no such terminal session")

    private func host(_ hostID: String, tenant: String) async throws -> TerminalHost {
        guard hostID.utf8.count <= 64, let host = try await self.store.host(hostID, tenant: tenant) else { throw Self.noHost }
        return host
    }

    private func session(_ text: String, tenant: String) async throws -> (TerminalSessionID, TerminalHost) {
        guard let id = TerminalSessionID(text), let host = try await self.store.host(id.hostID, tenant: tenant) else { throw Self.noSession }
        return (id, host)
    }

    private func sessions(on host: TerminalHost, tenant: String) async throws -> [TmuxCommandLine.Session] {
        let connection = try await self.pool.connection(to: host, tenant: tenant)
        let result = try await connection.run(TmuxCommandLine.listSessions(socket: host.tmuxSocket), maxOutputBytes: 1 << 20)
        if result.exitStatus == 0 { return TmuxCommandLine.parseSessions(result.stdoutText) }
        if TmuxCommandLine.isNoServer(result.stderrText) { return [] }
        if result.exitStatus == 127 { throw APIError(.terminalInitFailed, "tmux is not installed on \(host.name)") }
        throw APIError(.terminalInitFailed, "tmux list-sessions failed on \(host.name): \(result.stderrText.prefix(300))")
    }

    /// Every host's sessions, listed in parallel; a host that fails is reported with its error
    /// and the others are listed all the same.
    private func listSessions(tenant: String) async throws -> SessionList {
        let hosts = try await self.store.list(tenant: tenant)
        return await withTaskGroup(of: (Int, [TerminalSessionInfo], HostListing).self) { group in
            for (index, host) in hosts.enumerated() {
                group.addTask {
                    do {
                        let sessions = try await self.sessions(on: host, tenant: tenant)
                        return (
                            index, sessions.map { TerminalSessionInfo(host: host, session: $0) },
                            HostListing(hostId: host.hostId, name: host.name, status: "ok")
                        )
                    } catch {
                        let failure = error as? APIError ?? APIError(.terminalInitFailed, "\(error)")
                        return (
                            index, [],
                            HostListing(
                                hostId: host.hostId,
                                name: host.name,
                                status: "error",
                                error: .init(code: failure.code.rawValue, message: failure.message)
                            )
                        )
                    }
                }
            }
            var results: [(Int, [TerminalSessionInfo], HostListing)] = []
            for await result in group { results.append(result) }
            results.sort { $0.0 < $1.0 }
            return SessionList(sessions: results.flatMap(\.1), hosts: results.map(\.2))
        }
    }

    // MARK: The attach WebSocket

    func addWebSocketRoute(to router: Router<WebSocketServiceContext>) {
        router.ws("v1/terminal/sessions/:sessionId/attach", shouldUpgrade: self.authentication.shouldUpgrade) { inbound, outbound, context in
            guard let identity = context.requestContext.identity else { return }
            let query = context.request.uri.queryParameters
            let refuse: @Sendable (APIError) async -> Void = { error in
                // Not in the same breath as the upgrade: some clients (HummingbirdWSClient among
                // them) lose frames that arrive together with the 101 response.
                try? await Task.sleep(for: .milliseconds(100))
                try? await outbound.write(.text(String(buffer: TerminalSession.encode(end: error))))
                let code: WebSocketErrorCode =
                    switch error.code {
                    case .protocolMismatch: .protocolError
                    case .permissionDenied, .invalidRequest, .notFound: .policyViolation
                    case .rateLimited: .unknown(1013)
                    default: .unexpectedServerError
                    }
                try? await outbound.close(code, reason: error.code.rawValue)
            }
            if let asked = query["protocol"].map(String.init), asked != TerminalSession.protocolVersion {
                await refuse(
                    APIError(.protocolMismatch, "this server speaks terminal protocol \(TerminalSession.protocolVersion); connect with ?protocol=1")
                )
                return
            }
            let wantsInput = ["1", "true"].contains(query["input"].map(String.init) ?? "")
            if wantsInput && !identity.scopes.contains(.terminalWrite) {
                await refuse(APIError(.permissionDenied, "input needs the terminal:write scope; attach without ?input=true to watch"))
                return
            }
            let seenAttachment = query["attachment"].map(String.init)
            var after: UInt64?
            if let text = query["after"] {
                guard let value = UInt64(text) else {
                    await refuse(APIError(.invalidRequest, "after must be a seq (an unsigned integer)"))
                    return
                }
                after = value
            }
            let logger = self.logger.with(identity)
            do {
                let (id, host) = try await self.session(context.requestContext.parameters.require("sessionId"), tenant: identity.tenant)
                let viewer = TerminalViewer(
                    id: self.viewerIDs.withLockedValue {
                        $0 += 1
                        return $0
                    },
                    identity: identity,
                    inputEnabled: wantsInput,
                    budget: self.settings.viewerBufferBytes
                )
                let attachment = try await self.attach(id, host: host, viewer: viewer, after: after, seen: seenAttachment, tenant: identity.tenant)
                do {
                    if wantsInput {
                        try await self.store.auditInputAttach(tenant: identity.tenant, actor: identity.subject, host: host.hostId, session: id.name)
                    }
                } catch {
                    attachment.remove(viewer)
                    throw error
                }
                do {
                    let hello = TerminalSession.hello(session: id, attachment: attachment.attachmentID, input: wantsInput)
                    try await outbound.write(.text(String(buffer: hello)))
                } catch {
                    attachment.remove(viewer)
                    return
                }
                let connection = WebSocketConnection(
                    limits: WebSocketLimits(
                        maxMessageBytes: self.settings.maxInputBytes + 256,
                        maxMessagesPer10Seconds: 2000,
                        pingInterval: .seconds(20),
                        liveness: .pingFrames,
                        stalledAfter: .seconds(30)
                    ),
                    heartbeats: self.heartbeats,
                    identity: identity,
                    logger: logger
                )
                let session = TerminalSession(viewer: viewer, attachment: attachment, logger: logger)
                await connection.run(inbound: inbound, outbound: outbound, channel: context.requestContext.channel, handler: session)
            } catch {
                let failure = error as? APIError ?? APIError(.terminalInitFailed, "\(error)")
                logger.notice("terminal attach refused", metadata: ["error": "\(failure.code.rawValue)"])
                await refuse(failure)
            }
        }
    }

    /// The session's shared attachment with `viewer` added (tried again when it ended under us,
    /// its last viewer having just left).
    private func attach(
        _ id: TerminalSessionID,
        host: TerminalHost,
        viewer: TerminalViewer,
        after: UInt64?,
        seen: String?,
        tenant: String
    ) async throws -> TerminalAttachment {
        var attempt = 0
        while true {
            let attachment = try await self.attachments.attachment(id, host: host, tenant: tenant)
            do {
                try await attachment.add(viewer, after: seen == attachment.attachmentID ? after : nil)
                return attachment
            } catch let error as APIError where error.code == .serviceUnavailable && attempt < 3 {
                attempt += 1
            }
        }
    }
}

import Contracts
import Foundation
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOWebSocket
import ServiceKit

/// terminal-broker's attach WebSocket (docs/terminal-protocol.md); the HTTP operations are
/// ``TerminalHandler``.
struct TerminalController: Sendable {
    let store: HostStore
    let attachments: TerminalAttachments
    let authentication: WebSocketAuthentication
    let heartbeats: WebSocketHeartbeats
    let settings: TerminalSettings
    let logger: Logger
    private let viewerIDs = NIOLockedValueBox(0)

    init(
        store: HostStore,
        attachments: TerminalAttachments,
        verifier: AccessTokenVerifier,
        heartbeats: WebSocketHeartbeats,
        settings: TerminalSettings,
        logger: Logger
    ) {
        self.store = store
        self.attachments = attachments
        self.authentication = WebSocketAuthentication(verifier: verifier, requiring: .terminalAttach)
        self.heartbeats = heartbeats
        self.settings = settings
        self.logger = logger
    }

    // MARK: The attach WebSocket

    func addWebSocketRoute(to routes: inout WebSocketRoutes) {
        routes.add("v1/terminal/sessions/:sessionId/attach", authentication: self.authentication) { request, socket in
            let identity = request.identity
            let query = request.uri.queryParameters
            let refuse: @Sendable (APIError) async -> Void = { error in
                try? socket.send(text: TerminalSession.encode(end: error))
                let code: WebSocketErrorCode =
                    switch error.code {
                    case .protocolMismatch: .protocolError
                    case .permissionDenied, .invalidRequest, .notFound: .policyViolation
                    case .rateLimited: .unknown(1013)
                    default: .unexpectedServerError
                    }
                socket.close(code, reason: error.code.rawValue)
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
                let (id, host) = try await self.store.requireSession(request.parameters["sessionId"] ?? "", tenant: identity.tenant)
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
                let unrecorded = attachment.unrecorded.withLockedValue { $0 }
                do {
                    if wantsInput {
                        try await self.store.auditInputAttach(tenant: identity.tenant, actor: identity.subject, host: host.hostId, session: id.name)
                    }
                    if let unrecorded {
                        try await self.store.auditUnrecordedAttach(
                            tenant: identity.tenant,
                            actor: identity.subject,
                            host: host.hostId,
                            session: id.name,
                            reason: unrecorded
                        )
                    }
                } catch {
                    attachment.remove(viewer)
                    throw error
                }
                do {
                    let hello = TerminalSession.hello(
                        session: id,
                        attachment: attachment.attachmentID,
                        input: wantsInput,
                        recorded: unrecorded == nil
                    )
                    try socket.send(text: hello)
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
                await connection.run(on: socket, handler: session)
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

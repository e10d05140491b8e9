import EventLog
import Contracts
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOWebSocket
import ServiceKit

/// `GET /v1/stream?protocol=1`: the WebSocket stream (docs/stream-protocol.md).
///
/// The access token (scope `stream:read`) comes in `Authorization: Bearer …` or, for clients
/// that cannot set headers on a WebSocket, `?access_token=…`; the tenant is the token's. A
/// request that fails authentication is not upgraded and gets the error envelope (401/403);
/// an authenticated request that is not an upgrade gets 400.
struct StreamController: Sendable {
    /// The protocol version this server speaks.
    static let protocolVersion = "1"

    let verifier: AccessTokenVerifier
    let hub: FeedHub
    let reader: EventLogReader
    let cache: ACPCache
    let heartbeats: Heartbeats
    let settings: FanoutSettings
    let logger: Logger

    /// The WebSocket route, on the upgrade router.
    func addWebSocketRoute(to router: Router<StreamRequestContext>) {
        router.ws(
            "v1/stream",
            shouldUpgrade: self.shouldUpgrade,
            onUpgrade: { inbound, outbound, context in
                guard let identity = context.requestContext.identity.value.withLock({ $0 }) else { return }
                var logger = self.logger
                logger[metadataKey: "tenant"] = .string(identity.tenant)
                logger[metadataKey: "subject"] = .string(identity.subject)
                let asked = context.request.uri.queryParameters["protocol"].map(String.init)
                guard asked == Self.protocolVersion else {
                    let message = ServerMessage.error(
                        .protocolMismatch,
                        "this server speaks stream protocol \(Self.protocolVersion); connect with ?protocol=\(Self.protocolVersion)"
                            + (asked.map { " (asked for \($0.prefix(16)))" } ?? ""),
                        requestID: nil
                    )
                    try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: message)))
                    try await outbound.close(.protocolError, reason: "protocol mismatch")
                    return
                }
                let session = StreamSession(tenant: identity.tenant, settings: self.settings, hub: self.hub, reader: self.reader, heartbeats: self.heartbeats, logger: logger)
                try await session.run(inbound: inbound, outbound: outbound)
            }
        )
    }

    /// `GET /v1/acp?protocol=1`: the ACP cache (seed 003), JSON-RPC 2.0.
    func addACPRoute(to router: Router<StreamRequestContext>) {
        router.ws(
            "v1/acp",
            shouldUpgrade: self.shouldUpgrade,
            onUpgrade: { inbound, outbound, context in
                guard let identity = context.requestContext.identity.value.withLock({ $0 }) else { return }
                guard context.request.uri.queryParameters["protocol"].map(String.init) == Self.protocolVersion else {
                    let message = ACPSession.error(id: nil, -32600, "ProtocolMismatch: this server speaks ACP cache protocol \(Self.protocolVersion); connect with ?protocol=\(Self.protocolVersion)")
                    try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: message)))
                    try await outbound.close(.protocolError, reason: "protocol mismatch")
                    return
                }
                var logger = self.logger
                logger[metadataKey: "tenant"] = .string(identity.tenant)
                logger[metadataKey: "subject"] = .string(identity.subject)
                let session = ACPSession(identity: identity, settings: self.settings, hub: self.hub, cache: self.cache, heartbeats: self.heartbeats, logger: logger)
                try await session.run(inbound: inbound, outbound: outbound)
            }
        )
    }

    /// The same paths on the HTTP router, for requests that were not upgraded: their
    /// authentication error, or 400 when they should have asked for an upgrade.
    func addFallbackRoute(to router: Router<ServiceRequestContext>) {
        for path in ["v1/stream", "v1/acp"] {
            router.get(RouterPath(path)) { request, _ -> Response in
                _ = try await self.authenticate(request)
                throw ServiceKitError(.api(.invalidRequest), "/\(path) is a WebSocket: send an upgrade request with ?protocol=\(Self.protocolVersion)")
            }
        }
    }

    /// Authenticates before the upgrade and hands the identity to the connection's handler.
    @Sendable private func shouldUpgrade(_ request: Request, _ context: StreamRequestContext) async throws -> RouterShouldUpgrade {
        let identity = try await self.authenticate(request)
        context.identity.value.withLock { $0 = identity }
        return .upgrade([:])
    }

    private func authenticate(_ request: Request) async throws -> AccessIdentity {
        let token: String
        if let query = request.uri.queryParameters["access_token"], request.headers[.authorization] == nil {
            token = String(query)
        } else {
            token = try request.bearerToken("access token")
        }
        let identity = try await self.verifier.verify(token)
        try identity.require(.streamRead)
        return identity
    }
}

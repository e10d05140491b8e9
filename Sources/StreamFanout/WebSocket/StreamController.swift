import Contracts
import EventLog
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import ServiceKit

/// `GET /v1/stream?protocol=1` (docs/stream-protocol.md) and `GET /v1/acp` (the ACP cache):
/// the WebSocket routes.
///
/// The access token (scope `stream:read`) comes in `Authorization: Bearer …` or, for clients
/// that cannot set headers on a WebSocket, a `swarmdeck.bearer.<token>` subprotocol; the
/// tenant is the token's. A
/// request that fails authentication is not upgraded and gets the error envelope (401/403);
/// an authenticated request that is not an upgrade gets 400.
struct StreamController: Sendable {
    /// The protocol version this server speaks.
    static let protocolVersion = "1"

    let authentication: WebSocketAuthentication
    /// `/v1/acp`'s: a person's token with `thread:read` (or `stream:read`), or a connector's
    /// agent session token.
    let acpAuthentication: WebSocketAuthentication
    /// Appends people's ACP frames to their threads.
    let relay: ACPFrameRelay
    let hub: FeedHub
    let reader: EventLogReader
    /// Replay pages in flight on this replica.
    let replays: AsyncPermits
    let cache: ACPCache
    /// Announces the ACP threads each `/v1/acp` connection follows live.
    let presence: ACPPresenceBoard
    let heartbeats: WebSocketHeartbeats
    let settings: FanoutSettings
    let logger: Logger
    /// Open connections per tenant, both routes together.
    let connections: TenantConnections

    /// The WebSocket route, on the upgrade router.
    func addWebSocketRoute(to router: Router<WebSocketServiceContext>) {
        self.addRoute(
            "v1/stream",
            to: router,
            authentication: self.authentication,
            missingProtocolIsCurrent: false,
            mismatch: { asked in
                ServerMessage.error(
                    .protocolMismatch,
                    "this server speaks stream protocol \(Self.protocolVersion); connect with ?protocol=\(Self.protocolVersion)"
                        + (asked.map { " (asked for \($0.prefix(16)))" } ?? ""),
                    requestID: nil
                )
            },
            run: { identity, logger, inbound, outbound, channel in
                let session = StreamSession(
                    identity: identity,
                    settings: self.settings,
                    hub: self.hub,
                    reader: self.reader,
                    replays: self.replays,
                    heartbeats: self.heartbeats,
                    logger: logger
                )
                await session.run(inbound: inbound, outbound: outbound, channel: channel)
            }
        )
    }

    /// `GET /v1/acp`: the ACP cache (seed 003), JSON-RPC 2.0. Seed 003's client names no
    /// protocol: a missing `protocol` is protocol 1; another version is refused.
    func addACPRoute(to router: Router<WebSocketServiceContext>) {
        self.addRoute(
            "v1/acp",
            to: router,
            authentication: self.acpAuthentication,
            missingProtocolIsCurrent: true,
            mismatch: { _ in
                ACPSession.error(
                    id: nil,
                    -32600,
                    "ProtocolMismatch: this server speaks ACP cache protocol \(Self.protocolVersion); connect with ?protocol=\(Self.protocolVersion)"
                )
            },
            run: { identity, logger, inbound, outbound, channel in
                let session = ACPSession(
                    identity: identity,
                    settings: self.settings,
                    hub: self.hub,
                    cache: self.cache,
                    presence: self.presence,
                    relay: self.relay,
                    heartbeats: self.heartbeats,
                    logger: logger
                )
                await session.run(inbound: inbound, outbound: outbound, channel: channel)
            }
        )
    }

    /// A WebSocket route: authenticated before the upgrade; a protocol version other than this
    /// server's gets `mismatch`'s message and a close with 1002; otherwise `run` serves it.
    private func addRoute(
        _ path: RouterPath,
        to router: Router<WebSocketServiceContext>,
        authentication: WebSocketAuthentication,
        missingProtocolIsCurrent: Bool,
        mismatch: @escaping @Sendable (_ asked: String?) -> ByteBuffer,
        run: @escaping @Sendable (AccessIdentity, Logger, WebSocketInboundStream, WebSocketOutboundWriter, any Channel) async -> Void
    ) {
        router.ws(path, shouldUpgrade: authentication.shouldUpgrade) { inbound, outbound, context in
            guard let identity = context.requestContext.identity else { return }
            let asked = context.request.uri.queryParameters["protocol"].map(String.init)
            guard asked == Self.protocolVersion || (asked == nil && missingProtocolIsCurrent) else {
                try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: mismatch(asked))))
                try await outbound.close(.protocolError, reason: "protocol mismatch")
                return
            }
            guard self.connections.acquire(identity.tenant) else {
                let refusal = ErrorEnvelope.Body(
                    code: .rateLimited,
                    message: "the tenant has \(self.connections.maxPerTenant) connections open on this server (fanout.max-connections-per-tenant)",
                    retryAfterSeconds: 5
                )
                let frame = StreamServerMessage.error(refusal)
                try await outbound.write(.text(String(decoding: try JSONEncoder().encode(frame), as: UTF8.self)))
                try await outbound.close(.unknown(1013), reason: "try again later")
                return
            }
            defer { self.connections.release(identity.tenant) }
            await run(identity, self.logger.with(identity), inbound, outbound, context.requestContext.channel)
        }
    }

    /// The same paths on the HTTP router, for requests that were not upgraded: their
    /// authentication error, or 400 when they should have asked for an upgrade.
    func addFallbackRoute(to router: Router<ServiceRequestContext>) {
        for (path, authentication) in [("v1/stream", self.authentication), ("v1/acp", self.acpAuthentication)] {
            router.get(RouterPath(path)) { request, _ -> Response in
                _ = try await authentication.authenticate(request)
                throw APIError(
                    .invalidRequest,
                    "/\(path) is a WebSocket: send an upgrade request with ?protocol=\(Self.protocolVersion)"
                )
            }
        }
    }
}

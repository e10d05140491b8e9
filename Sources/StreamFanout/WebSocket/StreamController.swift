import Contracts
import EventLog
import Foundation
import Hummingbird
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

    /// `GET /v1/stream`.
    func addStreamRoute(to routes: inout WebSocketRoutes) {
        self.addRoute(
            "v1/stream",
            to: &routes,
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
            serve: { identity, logger, socket, whenDone in
                let session = StreamSession(
                    identity: identity,
                    eventLoop: socket.eventLoop,
                    settings: self.settings,
                    hub: self.hub,
                    reader: self.reader,
                    replays: self.replays,
                    heartbeats: self.heartbeats,
                    logger: logger
                )
                session.start(on: socket, whenDone: whenDone)
            }
        )
    }

    /// `GET /v1/acp`: the ACP cache (seed 003), JSON-RPC 2.0. Seed 003's client names no
    /// protocol: a missing `protocol` is protocol 1; another version is refused.
    func addACPRoute(to routes: inout WebSocketRoutes) {
        self.addRoute(
            "v1/acp",
            to: &routes,
            authentication: self.acpAuthentication,
            missingProtocolIsCurrent: true,
            mismatch: { _ in
                ACPSession.error(
                    id: nil,
                    -32600,
                    "ProtocolMismatch: this server speaks ACP cache protocol \(Self.protocolVersion); connect with ?protocol=\(Self.protocolVersion)"
                )
            },
            serve: { identity, logger, socket, whenDone in
                let session = ACPSession(
                    identity: identity,
                    eventLoop: socket.eventLoop,
                    settings: self.settings,
                    hub: self.hub,
                    cache: self.cache,
                    presence: self.presence,
                    relay: self.relay,
                    heartbeats: self.heartbeats,
                    logger: logger
                )
                session.start(on: socket, whenDone: whenDone)
            }
        )
    }

    /// A WebSocket route: authenticated before the upgrade; a protocol version other than this
    /// server's gets `mismatch`'s message and a close with 1002, a tenant at its connection
    /// limit an error and 1013; otherwise `serve` serves it and calls `whenDone` once it ends
    /// (which frees the tenant's slot).
    private func addRoute(
        _ path: String,
        to routes: inout WebSocketRoutes,
        authentication: WebSocketAuthentication,
        missingProtocolIsCurrent: Bool,
        mismatch: @escaping @Sendable (_ asked: String?) -> ByteBuffer,
        serve: @escaping @Sendable (AccessIdentity, Logger, UpgradedWebSocket, _ whenDone: @escaping @Sendable () -> Void) async -> Void
    ) {
        routes.add(path, authentication: authentication, hint: "with ?protocol=\(Self.protocolVersion)") { request, socket in
            let identity = request.identity
            let asked = request.uri.queryParameters["protocol"].map(String.init)
            guard asked == Self.protocolVersion || (asked == nil && missingProtocolIsCurrent) else {
                try? socket.send(text: mismatch(asked))
                socket.close(.protocolError, reason: "protocol mismatch")
                return
            }
            guard self.connections.acquire(identity.tenant) else {
                let refusal = ErrorEnvelope.Body(
                    code: .rateLimited,
                    message: "the tenant has \(self.connections.maxPerTenant) connections open on this server (fanout.max-connections-per-tenant)",
                    retryAfterSeconds: 5
                )
                if let frame = try? JSONEncoder().encode(StreamServerMessage.error(refusal)) {
                    try? socket.send(text: ByteBuffer(bytes: frame))
                }
                socket.close(.unknown(1013), reason: "try again later")
                return
            }
            await serve(identity, request.logger, socket) { self.connections.release(identity.tenant) }
        }
    }
}

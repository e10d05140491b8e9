public import Contracts
public import Hummingbird
public import HummingbirdWebSocket

/// Authenticates a WebSocket upgrade with an access token before the upgrade, so a refused
/// request gets the error envelope (401/403) instead of a socket.
///
/// The token comes from `Authorization: Bearer …`; for clients that cannot set headers on a
/// WebSocket (browsers), from a `swarmdeck.bearer.<token>` subprotocol
/// (``WebSocketBearerProtocol``), or else from `?access_token=…`. Use it only on
/// WebSocket paths (the upgrade, and the same path's answer to a request that was not an
/// upgrade). The identity reaches the handler as `context.requestContext.identity`.
public struct WebSocketAuthentication: Sendable {
    let verifier: AccessTokenVerifier
    let scopes: [Scope]

    public init(verifier: AccessTokenVerifier, requiring scopes: Scope...) {
        self.verifier = verifier
        self.scopes = scopes
    }

    /// The identity of `request`'s token, with the required scopes.
    /// - Throws: `AuthInvalid`, `AuthExpired` or `PermissionDenied`.
    public func authenticate(_ request: Request) async throws -> AccessIdentity {
        let token: String
        if request.headers[.authorization] != nil {
            token = try request.bearerToken("access token")
        } else if let offered = Self.offeredProtocol(request).token {
            token = offered
        } else if let query = request.uri.queryParameters["access_token"] {
            token = String(query)
        } else {
            token = try request.bearerToken("access token")
        }
        return try await self.verifier.verify(token, requiring: self.scopes)
    }

    /// The upgrade check of `router.ws(_:shouldUpgrade:onUpgrade:)`. It selects
    /// ``WebSocketBearerProtocol/application`` when the client offered it.
    @Sendable public func shouldUpgrade(_ request: Request, _ context: WebSocketServiceContext) async throws -> RouterShouldUpgrade {
        context.identity = try await self.authenticate(request)
        guard Self.offeredProtocol(request).offersApplication else { return .upgrade([:]) }
        return .upgrade([.secWebSocketProtocol: WebSocketBearerProtocol.application])
    }

    private static func offeredProtocol(_ request: Request) -> WebSocketBearerProtocol {
        WebSocketBearerProtocol(headerValues: request.headers[values: .secWebSocketProtocol])
    }
}

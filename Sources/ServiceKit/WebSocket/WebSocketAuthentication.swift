public import Contracts
public import Hummingbird
public import HummingbirdWebSocket

/// Authenticates a WebSocket upgrade with an access token before the upgrade, so a refused
/// request gets the error envelope (401/403) instead of a socket.
///
/// The token comes from `Authorization: Bearer …` or, for clients that cannot set headers on a
/// WebSocket (browsers), from `?access_token=…` when there is no header. Use it only on
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
        if let query = request.uri.queryParameters["access_token"], request.headers[.authorization] == nil {
            token = String(query)
        } else {
            token = try request.bearerToken("access token")
        }
        return try await self.verifier.verify(token, requiring: self.scopes)
    }

    /// The upgrade check of `router.ws(_:shouldUpgrade:onUpgrade:)`.
    @Sendable public func shouldUpgrade(_ request: Request, _ context: WebSocketServiceContext) async throws -> RouterShouldUpgrade {
        context.identity = try await self.authenticate(request)
        return .upgrade([:])
    }
}

public import Contracts
public import Hummingbird
public import HummingbirdWebSocket

/// Authenticates a WebSocket upgrade with an access token before the upgrade: a refused upgrade
/// gets no socket (Hummingbird answers it with a bare 400), and the same path's answer to a
/// request that was not an upgrade gets the error envelope (401/403).
///
/// The token comes from `Authorization: Bearer …`, or for clients that cannot set headers on a
/// WebSocket (browsers), from a `swarmdeck.bearer.<token>` subprotocol
/// (``WebSocketBearerProtocol``). Never from the URL: a query string ends up in access and
/// error logs, proxies' included (`?access_token=` is refused as it was not there: 401).
/// Use it only on WebSocket paths
/// (the upgrade, and the same path's answer to a request that was not an upgrade). The identity
/// reaches the handler as `context.requestContext.identity`.
public struct WebSocketAuthentication: Sendable {
    let verifier: AccessTokenVerifier
    let scopes: [Scope]
    /// Whether an agent session token is taken too (``AccessIdentity/agentSession``).
    let acceptsAgentSessions: Bool

    /// Takes an access token holding one of `scopes` (any, when none are named) and, with
    /// `acceptsAgentSessions`, an agent session token, whose identity holds no scope.
    public init(verifier: AccessTokenVerifier, requiring scopes: Scope..., acceptsAgentSessions: Bool = false) {
        self.verifier = verifier
        self.scopes = scopes
        self.acceptsAgentSessions = acceptsAgentSessions
    }

    /// The identity of `request`'s token, with the required scopes.
    /// - Throws: `AuthInvalid`, `AuthExpired` or `PermissionDenied`.
    public func authenticate(_ request: Request) async throws -> AccessIdentity {
        try await self.authenticate(request, offered: Self.offeredProtocol(request))
    }

    /// The upgrade check of `router.ws(_:shouldUpgrade:onUpgrade:)`. It selects
    /// ``WebSocketBearerProtocol/application`` when the client offered it.
    @Sendable public func shouldUpgrade(_ request: Request, _ context: WebSocketServiceContext) async throws -> RouterShouldUpgrade {
        let offered = Self.offeredProtocol(request)
        context.identity = try await self.authenticate(request, offered: offered)
        return .upgrade(offered.offersApplication ? [.secWebSocketProtocol: WebSocketBearerProtocol.application] : [:])
    }

    private func authenticate(_ request: Request, offered: WebSocketBearerProtocol) async throws -> AccessIdentity {
        let token: String
        if request.headers[.authorization] == nil, let headless = offered.token {
            token = headless
        } else {
            token = try request.bearerToken("access token")
        }
        let refusal: APIError
        do {
            return try await self.verifier.verify(token, requiring: self.scopes)
        } catch {
            refusal = error
        }
        guard refusal.code == .authInvalid, self.acceptsAgentSessions else { throw refusal }
        // Not an access token: maybe an agent session's (both refusals are 401s; an expired
        // session says so).
        let sessionRefusal: APIError
        do {
            return AccessIdentity(agentSession: try await self.verifier.verifyAgentSession(token))
        } catch {
            sessionRefusal = error
        }
        throw sessionRefusal.code == .authExpired ? sessionRefusal : refusal
    }

    private static func offeredProtocol(_ request: Request) -> WebSocketBearerProtocol {
        WebSocketBearerProtocol(headerValues: request.headers[values: .secWebSocketProtocol])
    }
}

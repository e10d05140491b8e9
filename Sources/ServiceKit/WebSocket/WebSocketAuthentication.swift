public import Contracts
import HTTPTypes
public import Hummingbird

/// Authenticates a WebSocket upgrade with an access token before the upgrade: a refused upgrade
/// gets no socket but the error envelope (401/403, from ``WebSocketUpgradeChannel``), as a
/// request to the same path that was not an upgrade does (``WebSocketRoutes/addHTTPAnswers(to:)``).
///
/// The token comes from `Authorization: Bearer …`, or for clients that cannot set headers on a
/// WebSocket (browsers), from a `swarmdeck.bearer.<token>` subprotocol
/// (``WebSocketBearerProtocol``). Never from the URL: a query string ends up in access and
/// error logs, proxies' included (`?access_token=` is refused as it was not there: 401).
/// Use it only on WebSocket paths (``WebSocketRoutes``, and the same path's HTTP route, which
/// answers a request that was not upgraded).
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
    public func authenticate(_ request: Request) async throws(APIError) -> AccessIdentity {
        let identity = try await self.authenticate(request.headers)
        RequestTenant.record(identity.tenant)
        return identity
    }

    /// The identity of an upgrade request's token, and the headers of the answer: it selects
    /// ``WebSocketBearerProtocol/application`` when the client offered it.
    func accept(_ headers: HTTPFields) async throws(APIError) -> (AccessIdentity, answer: HTTPFields) {
        let identity = try await self.authenticate(headers)
        let offered = WebSocketBearerProtocol(headerValues: headers[values: .secWebSocketProtocol])
        return (identity, offered.offersApplication ? [.secWebSocketProtocol: WebSocketBearerProtocol.application] : [:])
    }

    private func authenticate(_ headers: HTTPFields) async throws(APIError) -> AccessIdentity {
        let offered = WebSocketBearerProtocol(headerValues: headers[values: .secWebSocketProtocol])
        let token: String
        if headers[.authorization] == nil, let headless = offered.token {
            token = headless
        } else {
            token = try Request.bearerToken(authorization: headers[.authorization], "access token")
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
}

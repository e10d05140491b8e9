public import Contracts
public import Hummingbird

/// Requires `Authorization: Bearer <access token>`, verifies it and puts the identity in the
/// context; with `scopes`, also requires each of them (403 `PermissionDenied` otherwise).
public struct AuthenticationMiddleware: RouterMiddleware {
    public typealias Context = ServiceRequestContext

    let verifier: AccessTokenVerifier
    let scopes: [Scope]

    public init(verifier: AccessTokenVerifier, requiring scopes: Scope...) {
        self.verifier = verifier
        self.scopes = scopes
    }

    public func handle(
        _ request: Request,
        context: ServiceRequestContext,
        next: (Request, ServiceRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let authorization = request.headers[.authorization] else {
            throw ServiceKitError(.api(.authInvalid), "missing Authorization: Bearer <access token>")
        }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw ServiceKitError(.api(.authInvalid), "the Authorization header must be Bearer <access token>")
        }
        let identity = try await self.verifier.verify(String(parts[1]))
        for scope in self.scopes { try identity.require(scope) }
        var context = context
        context.identity = identity
        context.logger[metadataKey: "tenant"] = .string(identity.tenant)
        context.logger[metadataKey: "subject"] = .string(identity.subject)
        return try await next(request, context)
    }
}

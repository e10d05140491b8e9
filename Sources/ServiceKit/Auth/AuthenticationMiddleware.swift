public import Contracts
public import Hummingbird

/// Requires `Authorization: Bearer <access token>`, verifies it and puts the identity in the
/// context; with `scopes`, also requires one of them (403 `PermissionDenied` otherwise).
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
        let identity = try await self.verifier.verify(try request.bearerToken("access token"), requiring: self.scopes)
        var context = context
        context.identity = identity
        context.logger = context.logger.with(identity)
        RequestTenant.record(identity.tenant)
        return try await next(request, context)
    }
}

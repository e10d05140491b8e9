public import Hummingbird

/// Requires `Authorization: Bearer <ingest key>`, checks it and puts the agent's tenant in the
/// context (``ServiceRequestContext/agentTenant``): the authenticator of the routes agents call.
public struct AgentAuthenticationMiddleware: RouterMiddleware {
    public typealias Context = ServiceRequestContext

    let keys: any AgentKeyAuthenticator

    public init(keys: any AgentKeyAuthenticator) {
        self.keys = keys
    }

    public func handle(
        _ request: Request,
        context: ServiceRequestContext,
        next: (Request, ServiceRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        let tenant = try await self.keys.authenticate(try request.bearerToken("ingest key"))
        context.agentTenant = tenant
        context.logger[metadataKey: "tenant"] = .string(tenant)
        RequestTenant.record(tenant)
        return try await next(request, context)
    }
}

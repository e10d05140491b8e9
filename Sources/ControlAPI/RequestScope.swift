import Hummingbird
import Logging
import ServiceKit

/// What the HTTP layer knows about the request an OpenAPI handler is serving: the generated
/// handlers see only the operation's declared inputs, so the correlation id, the credential
/// and the request's logger travel in a task local set by ``RequestScopeMiddleware``.
struct RequestScope: Sendable {
    @TaskLocal static var current: RequestScope?

    var requestID: String
    var authorization: String?
    var logger: Logger

    /// The scope of the running request (a handler outside a request has none: a bug).
    static func require() throws(ServiceKitError) -> RequestScope {
        guard let current else { throw ServiceKitError(.api(.serverError), "no request scope") }
        return current
    }
}

/// Sets ``RequestScope/current`` for the rest of the request, and bounds the body: every
/// control-api body is small JSON, so one larger than `maxBodyBytes` is refused with 413
/// before anything decodes it.
struct RequestScopeMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext

    var maxBodyBytes = 64 << 10

    func handle(
        _ request: Request,
        context: ServiceRequestContext,
        next: (Request, ServiceRequestContext) async throws -> Response
    ) async throws -> Response {
        var request = request
        _ = try await request.collectBody(upTo: self.maxBodyBytes)
        let scope = RequestScope(requestID: context.requestID, authorization: request.headers[.authorization], logger: context.logger)
        return try await RequestScope.$current.withValue(scope) {
            try await next(request, context)
        }
    }
}

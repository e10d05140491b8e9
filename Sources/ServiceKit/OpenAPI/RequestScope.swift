import Contracts
public import Hummingbird
public import Logging

/// What the HTTP layer knows about the request an OpenAPI handler is serving: the generated
/// handlers see only the operation's declared inputs, so the correlation id and the request's
/// logger travel in a task local set by ``RequestScopeMiddleware`` (and who is calling in
/// ``Caller/current``, set by ``OperationAuthenticationMiddleware``).
public struct RequestScope: Sendable {
    @TaskLocal public static var current: RequestScope?

    /// The correlation id of the request.
    public var requestID: String
    /// The request's logger (with its correlation id).
    public var logger: Logger
    /// Where the request comes from (``ClientAddress``), for limits per source.
    public var clientAddress: String
    /// The client's W3C `traceparent`, when it sent a valid one.
    public var traceParent: TraceParent? = nil

    /// `x-request-id` and, when the client sent one, `traceparent`: the headers a message this
    /// request causes carries on the bus.
    public var busHeaders: NATSHeaders {
        var headers: NATSHeaders = [HeaderName.requestID: self.requestID]
        if let trace = self.traceParent { headers[TraceParent.headerName] = trace.header }
        return headers
    }
}

/// Sets ``RequestScope/current`` for the rest of the request, and bounds the body: an OpenAPI
/// service's bodies are small JSON, so one larger than `maxBodyBytes` is refused with 413
/// before anything decodes it.
public struct RequestScopeMiddleware: RouterMiddleware {
    public typealias Context = ServiceRequestContext

    let maxBodyBytes: Int
    let trustedProxies: Set<String>

    /// - Parameter trustedProxies: peers whose `X-Forwarded-For` names the client (see
    ///   ``ClientAddress``).
    public init(maxBodyBytes: Int = 64 << 10, trustedProxies: Set<String> = ["127.0.0.1", "::1"]) {
        self.maxBodyBytes = maxBodyBytes
        self.trustedProxies = trustedProxies
    }

    public func handle(
        _ request: Request,
        context: ServiceRequestContext,
        next: (Request, ServiceRequestContext) async throws -> Response
    ) async throws -> Response {
        var request = request
        _ = try await request.collectBody(upTo: self.maxBodyBytes)
        let client = ClientAddress.resolve(
            peer: context.peerAddress,
            forwardedFor: request.headers[.xForwardedFor],
            trustedProxies: self.trustedProxies
        )
        let scope = RequestScope(requestID: context.requestID, logger: context.logger, clientAddress: client, traceParent: context.traceParent)
        return try await RequestScope.$current.withValue(scope) {
            try await next(request, context)
        }
    }
}

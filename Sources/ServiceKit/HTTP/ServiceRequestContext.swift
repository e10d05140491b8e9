public import Hummingbird

/// The request context of every Swarmdeck HTTP service.
public struct ServiceRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The correlation id: the client's `x-request-id` if it sent a valid one, else a new one.
    public var requestID: String
    /// The client's W3C `traceparent`, when it sent a valid one (passed on onto the bus).
    public var traceParent: TraceParent?
    /// Who is calling, once an authentication middleware has run.
    public var identity: AccessIdentity?
    /// The tenant of the agent calling, once ``AgentAuthenticationMiddleware`` has run.
    public var agentTenant: String?
    /// The connection's remote address (nil for in-process test requests).
    public let peerAddress: String?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.requestID = ""
        self.traceParent = nil
        self.identity = nil
        self.agentTenant = nil
        self.peerAddress = source.channel.remoteAddress?.ipAddress
    }

    /// The identity, or a 401 when the route was not behind authentication.
    public func requireIdentity() throws(APIError) -> AccessIdentity {
        guard let identity = self.identity else {
            throw APIError(.authInvalid, "an access token is required")
        }
        return identity
    }

    /// The agent's tenant, or a 401 when the route was not behind agent authentication.
    public func requireAgentTenant() throws(APIError) -> String {
        guard let tenant = self.agentTenant else {
            throw APIError(.authInvalid, "an ingest key is required")
        }
        return tenant
    }
}

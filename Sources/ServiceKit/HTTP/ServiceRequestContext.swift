public import Hummingbird

/// The request context of every Swarmdeck HTTP service.
public struct ServiceRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The correlation id: the client's `x-request-id` if it sent a valid one, else a new one.
    public var requestID: String
    /// Who is calling, once an authentication middleware has run.
    public var identity: AccessIdentity?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.requestID = ""
        self.identity = nil
    }

    /// The identity, or a 401 when the route was not behind authentication.
    public func requireIdentity() throws(ServiceKitError) -> AccessIdentity {
        guard let identity = self.identity else {
            throw ServiceKitError(.api(.authInvalid), "an access token is required")
        }
        return identity
    }
}

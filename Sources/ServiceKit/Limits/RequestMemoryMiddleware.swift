public import Hummingbird
public import Metrics

/// Holds a share of a ``ByteBudget`` for each request while it is served: `factor` times the
/// body it may bring (its `Content-Length`, at most `maxBodyBytes`; `maxBodyBytes` when the
/// length is unknown or the body is compressed). Beyond the budget: 429 `RateLimited` with
/// `Retry-After: 1`, before anything is read.
public struct RequestMemoryMiddleware: RouterMiddleware {
    public typealias Context = ServiceRequestContext

    public let budget: ByteBudget
    let maxBodyBytes: Int
    let factor: Int
    let refused: Counter?

    /// - Parameters:
    ///   - factor: what serving a request costs per byte of its body, at most (the body, its
    ///     parsed form, what is rendered from it).
    ///   - refused: counts the requests refused.
    public init(budget: ByteBudget, maxBodyBytes: Int, factor: Int, refused: Counter? = nil) {
        self.budget = budget
        self.maxBodyBytes = maxBodyBytes
        self.factor = factor
        self.refused = refused
    }

    /// The share a request with these headers takes.
    public func cost(of request: Request) -> Int {
        let encoding = request.headers[.contentEncoding]?.lowercased()
        let compressed = !(encoding == nil || encoding == "" || encoding == "identity")
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        let body = compressed ? self.maxBodyBytes : min(max(declared ?? self.maxBodyBytes, 0), self.maxBodyBytes)
        return max(body, 1024) * self.factor
    }

    public func handle(
        _ request: Request,
        context: ServiceRequestContext,
        next: (Request, ServiceRequestContext) async throws -> Response
    ) async throws -> Response {
        let cost = self.cost(of: request)
        guard self.budget.reserve(cost) else {
            self.refused?.increment()
            throw APIError(.rateLimited, "the service is reading as many large requests as it may at once; retry shortly", retryAfterSeconds: 1)
        }
        defer { self.budget.release(cost) }
        return try await next(request, context)
    }
}

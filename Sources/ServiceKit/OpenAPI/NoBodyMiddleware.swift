import Contracts
public import HTTPTypes
public import OpenAPIRuntime

/// A request that sends no body reaches its operation without one. The transport hands the
/// generated code an empty body instead, which an operation whose body is optional (seed 004's
/// stop, `POST … /stop` with nothing) would refuse as malformed JSON; an operation whose body
/// is required still answers 400. Only a request without `Content-Type` is looked at: a known
/// `Content-Length` says it, else its body is read (at most ``maxUntypedBytes``, 413 past it;
/// HTTP/1.1's chunked framing, or HTTP/2, need not say a length).
public struct NoBodyMiddleware: ServerMiddleware {
    /// The most a body without `Content-Type` may hold.
    public static let maxUntypedBytes = 1 << 20

    /// The middleware; stateless.
    public init() {}

    /// Hands `next` no body when the request sent none, else the body as it came (read once
    /// into memory when it has no `Content-Type` and no known length).
    public func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        metadata: ServerRequestMetadata,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard request.headerFields[.contentType] == nil, let body else { return try await next(request, body, metadata) }
        if case .known(let length) = body.length { return try await next(request, length == 0 ? nil : body, metadata) }
        var bytes: [UInt8] = []
        for try await chunk in body {
            guard bytes.count + chunk.count <= Self.maxUntypedBytes else {
                throw APIError(.payloadTooLarge, "a body without Content-Type may hold at most \(Self.maxUntypedBytes) bytes; send application/json")
            }
            bytes += chunk
        }
        return try await next(request, bytes.isEmpty ? nil : HTTPBody(bytes), metadata)
    }
}

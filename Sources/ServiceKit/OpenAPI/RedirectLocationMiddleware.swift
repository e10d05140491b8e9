import Foundation
public import HTTPTypes
public import OpenAPIRuntime

/// A redirect's `Location` reaches the client as the operation wrote it. swift-openapi-runtime
/// percent-encodes every header value it serialises (apple/swift-openapi-generator #529, #857),
/// which turns `https://console.example/signin?code=…` into one opaque path step; percent-encoding
/// is undone exactly by one decoding, so the value written is restored.
public struct RedirectLocationMiddleware: ServerMiddleware {
    /// The middleware; stateless.
    public init() {}

    /// Decodes the `Location` of a 3xx answer once.
    public func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        metadata: ServerRequestMetadata,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var (response, body) = try await next(request, body, metadata)
        if response.status.kind == .redirection, let location = response.headerFields[.location],
            let written = location.removingPercentEncoding
        {
            response.headerFields[.location] = written
        }
        return (response, body)
    }
}

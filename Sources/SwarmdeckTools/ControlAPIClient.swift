public import AsyncHTTPClient
public import ControlAPIContract
import Foundation
import HTTPTypes
import NIOCore
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime

extension Client {
    /// A client of control-api's operators' document (generated from openapi/control-api.yaml)
    /// at `url`, the service or the edge, sending `Authorization: Bearer <credential>` (an
    /// access token) on every request. The agents' channel has its own (``agentChannel(url:credential:httpClient:timeout:)``).
    /// - Parameter timeout: for a whole request; a long poll needs more than its wait.
    public static func controlAPI(url: String, credential: String, httpClient: HTTPClient, timeout: Duration = .seconds(40)) throws -> Client {
        try OpenAPIClientParts.client(
            { Client(serverURL: $0, transport: $1, middlewares: $2) },
            url: url,
            credential: credential,
            httpClient: httpClient,
            timeout: timeout
        )
    }
}

/// What every generated client of ours is built from: the server URL, the AsyncHTTPClient
/// transport with a whole-request timeout, and the bearer credential.
enum OpenAPIClientParts {
    /// A generated `Client` (given as its initializer) from these parts.
    static func client<C>(
        _ make: (URL, any ClientTransport, [any ClientMiddleware]) -> C,
        url: String,
        credential: String,
        httpClient: HTTPClient,
        timeout: Duration
    ) throws -> C {
        let (serverURL, transport, middlewares) = try Self.make(url: url, credential: credential, httpClient: httpClient, timeout: timeout)
        return make(serverURL, transport, middlewares)
    }

    static func make(
        url: String,
        credential: String,
        httpClient: HTTPClient,
        timeout: Duration
    ) throws -> (URL, AsyncHTTPClientTransport, [any ClientMiddleware]) {
        guard let serverURL = URL(string: url), serverURL.host != nil else { throw ControlAPIClientError("not a base URL: \(url)") }
        let transport = AsyncHTTPClientTransport(
            configuration: .init(
                client: httpClient,
                timeout: .nanoseconds(timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
            )
        )
        return (serverURL, transport, [BearerMiddleware(credential: credential)])
    }
}

/// An answer control-api gave instead of the one asked for, with its error envelope's code and
/// message.
public struct ControlAPIClientError: Error, CustomStringConvertible {
    /// The HTTP status of the answer, if there was one.
    public let status: Int?
    public let description: String

    public init(_ description: String) {
        self.status = nil
        self.description = description
    }

    /// The error of an operation's `default` (error) answer.
    public init(status: Int, _ answer: Components.Responses._Error) {
        let envelope = try? answer.body.json.error
        self.init(status: status, service: "control-api", code: envelope?.code, message: envelope?.message)
    }

    /// An error answer of `service`, from its error envelope's code and message.
    public init(status: Int, service: String, code: String?, message: String?) {
        self.status = status
        self.description = "\(service) answered \(status) \(code ?? ""): \(message ?? "")"
    }

    /// Whether retrying cannot help (the request itself was refused).
    public var isClientError: Bool { self.status.map { (400..<500).contains($0) } ?? false }

    /// Whether `error`, thrown by a generated client's operation, is a refusal that retrying
    /// cannot help: a 4xx answer, whether its body was our error envelope or something else
    /// (a proxy's HTML page, which the client fails to decode).
    public static func isRefusal(_ error: any Error) -> Bool {
        if let error = error as? ControlAPIClientError { return error.isClientError }
        if let error = error as? ClientError, let status = error.response?.status.code { return (400..<500).contains(status) }
        return false
    }
}

/// Adds `Authorization: Bearer <credential>`.
struct BearerMiddleware: ClientMiddleware {
    let credential: String

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = "Bearer \(self.credential)"
        return try await next(request, body, baseURL)
    }
}

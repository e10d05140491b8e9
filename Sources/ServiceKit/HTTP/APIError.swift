public import Contracts
public import HTTPTypes

/// An answer to a client that did something the API refuses (or that must come back later):
/// ``ErrorEnvelopeMiddleware`` renders it as the shared error envelope with its code's status
/// and this message. Failures of our own infrastructure are ``ServiceKitError``s instead; their
/// detail stays in the log.
public struct APIError: Error, CustomStringConvertible, Sendable {
    /// The code of the shared taxonomy; it decides the HTTP status.
    public let code: ErrorCode
    /// A sentence for the client.
    public let message: String
    /// Field-level problems of an invalid request (field path → problem).
    public let details: [String: String]?
    /// Seconds after which a retry may succeed (`Retry-After`).
    public let retryAfterSeconds: Int?

    public init(_ code: ErrorCode, _ message: String, details: [String: String]? = nil, retryAfterSeconds: Int? = nil) {
        self.code = code
        self.message = message
        self.details = details
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The HTTP status of ``code``.
    public var status: HTTPResponse.Status { HTTPResponse.Status(code: self.code.httpStatus) }

    public var description: String { "APIError.\(self.code.rawValue): \(self.message)" }
}

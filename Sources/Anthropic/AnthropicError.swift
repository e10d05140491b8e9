/// Why a call to the Messages API failed, after the retries the client makes (seed 001's
/// error table, with the API's own error kinds kept apart). Messages come from the API's error
/// body or from the client; none ever holds the API key.
public enum AnthropicError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No API key is configured; thrown before any request is sent.
    case missingAPIKey
    /// The key was refused (401 `authentication_error`) or lacks permission (403
    /// `permission_error`). Never retried.
    case authentication(String)
    /// 429 `rate_limit_error` on every attempt; `retryAfterSeconds` is the last answer's
    /// `retry-after`, when it had one.
    case rateLimited(retryAfterSeconds: Double?, message: String)
    /// 529 `overloaded_error` on every attempt, or an `overloaded_error` event in a stream.
    case overloaded(String)
    /// A 5xx other than 529 on every attempt.
    case server(status: Int, message: String)
    /// A 4xx other than 401, 403 and 429: the request itself is wrong (400
    /// `invalid_request_error`, 404 `not_found_error`, 413 `request_too_large`, …). Never
    /// retried, except 408 and 409 as the official SDKs do.
    case invalidRequest(status: Int, type: String, message: String)
    /// The connection failed or timed out on every attempt.
    case network(String)
    /// The answer could not be understood: an undecodable or oversized body, a stream that ended
    /// before `message_stop`, or a stream `error` event (its error type is in the message).
    case invalidResponse(String)
    /// The calling task was cancelled.
    case cancelled

    /// What to show the person who asked (seed 001's wording).
    public var userMessage: String {
        switch self {
        case .missingAPIKey: "API key not set. Go to Settings to add your Anthropic key."
        case .authentication: "API key not accepted. Go to Settings to check your Anthropic key."
        case .rateLimited: "Rate limit reached. Please wait and try again."
        case .overloaded: "Server error (529). Please try again."
        case .server(let status, _): "Server error (\(status)). Please try again."
        case .invalidRequest(let status, _, let message): "The AI provider refused the request (\(status)): \(message)"
        case .network(let description): "Network error: \(description)"
        case .invalidResponse: "Unexpected response from AI provider."
        case .cancelled: "Cancelled."
        }
    }

    /// Whether trying the same request again later may succeed (seed 001's "Retry button").
    public var retryable: Bool {
        switch self {
        case .rateLimited, .overloaded, .server, .network: true
        case .invalidRequest(let status, _, _): status == 408 || status == 409
        case .missingAPIKey, .authentication, .invalidResponse, .cancelled: false
        }
    }

    /// For logs and developers: the kind, the status and the API's message.
    public var description: String {
        switch self {
        case .missingAPIKey: "no Anthropic API key is configured"
        case .authentication(let message): "Anthropic refused the API key: \(message)"
        case .rateLimited(let retryAfter, let message):
            "Anthropic rate limit (429)\(retryAfter.map { ", retry after \($0)s" } ?? ""): \(message)"
        case .overloaded(let message): "Anthropic is overloaded (529): \(message)"
        case .server(let status, let message): "Anthropic server error (\(status)): \(message)"
        case .invalidRequest(let status, let type, let message): "Anthropic refused the request (\(status) \(type)): \(message)"
        case .network(let description): "network error talking to Anthropic: \(description)"
        case .invalidResponse(let description): "unexpected response from Anthropic: \(description)"
        case .cancelled: "the Anthropic request was cancelled"
        }
    }
}

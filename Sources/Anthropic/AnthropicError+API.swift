extension AnthropicError {
    /// The error for an HTTP answer other than 2xx: `errorType` and `message` come from the
    /// error body (`{"type":"error","error":{"type","message"},"request_id"}`) when it had
    /// one, `retryAfterSeconds` from its `retry-after` headers.
    ///
    /// 401 and 403 are ``authentication(_:)``, 429 ``rateLimited(retryAfterSeconds:message:)``,
    /// 529 ``overloaded(_:)``, other 5xx ``server(status:message:)``, other 4xx
    /// ``invalidRequest(status:type:message:)``; anything else (1xx, 3xx) is
    /// ``invalidResponse(_:)``.
    public init(status: Int, errorType: String?, message: String?, retryAfterSeconds: Double? = nil) {
        let message = message ?? "HTTP \(status)"
        switch status {
        case 401, 403: self = .authentication(message)
        case 429: self = .rateLimited(retryAfterSeconds: retryAfterSeconds, message: message)
        case 529: self = .overloaded(message)
        case 500...599: self = .server(status: status, message: message)
        case 400...499: self = .invalidRequest(status: status, type: errorType ?? Self.defaultErrorType(status), message: message)
        default: self = .invalidResponse("unexpected HTTP status \(status)")
        }
    }

    /// The error for an `error` event in a stream that had started with 200: an
    /// `overloaded_error` is ``overloaded(_:)``, any other type ``invalidResponse(_:)`` naming
    /// the type.
    public init(streamErrorType: String, message: String) {
        if streamErrorType == "overloaded_error" {
            self = .overloaded(message)
        } else {
            self = .invalidResponse("error event in the stream (\(streamErrorType)): \(message)")
        }
    }

    /// The API's error type for a status, for a body without one.
    static func defaultErrorType(_ status: Int) -> String {
        switch status {
        case 401: "authentication_error"
        case 403: "permission_error"
        case 404: "not_found_error"
        case 413: "request_too_large"
        case 429: "rate_limit_error"
        case 529: "overloaded_error"
        case 500...599: "api_error"
        default: "invalid_request_error"
        }
    }
}

/// The one JSON error body every REST service returns, and the payload of WebSocket `error`
/// frames:
///
/// ```json
/// {"error": {"code": "AuthExpired", "class": "auth", "message": "…",
///            "requestId": "…", "retryable": false}}
/// ```
public struct ErrorEnvelope: Codable, Sendable, Equatable {
    /// The error itself.
    public struct Body: Codable, Sendable, Equatable {
        public var code: ErrorCode
        public var errorClass: ErrorClass
        public var message: String
        public var requestId: String?
        public var retryable: Bool
        public var retryAfterSeconds: Int?
        /// Field-level detail for `InvalidRequest` (field path → problem).
        public var details: [String: String]?

        enum CodingKeys: String, CodingKey {
            case code
            case errorClass = "class"
            case message
            case requestId
            case retryable
            case retryAfterSeconds
            case details
        }

        public init(
            code: ErrorCode,
            message: String,
            requestId: String? = nil,
            retryAfterSeconds: Int? = nil,
            details: [String: String]? = nil
        ) {
            self.code = code
            self.errorClass = code.errorClass
            self.message = message
            self.requestId = requestId
            self.retryable = code.isRetryable
            self.retryAfterSeconds = retryAfterSeconds
            self.details = details
        }
    }

    public var error: Body

    public init(_ body: Body) {
        self.error = body
    }

    public init(
        code: ErrorCode,
        message: String,
        requestId: String? = nil,
        retryAfterSeconds: Int? = nil,
        details: [String: String]? = nil
    ) {
        self.error = Body(
            code: code,
            message: message,
            requestId: requestId,
            retryAfterSeconds: retryAfterSeconds,
            details: details
        )
    }
}

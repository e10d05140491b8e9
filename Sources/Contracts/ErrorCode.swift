/// The error codes every REST and WebSocket service answers with.
///
/// The first block is the taxonomy of seed 000 §13, which the phone maps to a title, a line
/// of text and a primary action; the second adds the codes a server needs that the client maps
/// onto the same actions through their ``ErrorClass``.
public enum ErrorCode: String, Sendable, Codable, CaseIterable {
    // Seed 000 §13
    case networkUnavailable = "NetworkUnavailable"
    case authExpired = "AuthExpired"
    case permissionDenied = "PermissionDenied"
    case rateLimited = "RateLimited"
    case serverError = "ServerError"
    case protocolMismatch = "ProtocolMismatch"
    case sshAuthFailed = "SSHAuthFailed"
    case sshHostUnreachable = "SSHHostUnreachable"
    case sshHostKeyMismatch = "SSHHostKeyMismatch"
    case tmuxSessionNotFound = "TmuxSessionNotFound"
    case terminalInitFailed = "TerminalInitFailed"

    // Server-side additions
    /// The credential is missing, malformed, forged or for another audience (re-authenticate).
    case authInvalid = "AuthInvalid"
    /// The request is malformed or a field is invalid.
    case invalidRequest = "InvalidRequest"
    /// The thing does not exist, or belongs to another tenant.
    case notFound = "NotFound"
    /// The request conflicts with the current state (e.g. a gate already decided).
    case conflict = "Conflict"
    /// The body is over the configured limit.
    case payloadTooLarge = "PayloadTooLarge"
    /// The content type or encoding is not accepted.
    case unsupportedMediaType = "UnsupportedMediaType"
    /// A dependency (Postgres, NATS) is unavailable; retry after the advertised delay.
    case serviceUnavailable = "ServiceUnavailable"
    // Seed 001's error table (pipeline-runner's AI provider)
    /// No provider API key is configured ("API key not set").
    case providerKeyMissing = "ProviderKeyMissing"
    /// The provider kept answering 429 ("Rate limit reached. Please wait.").
    case providerRateLimited = "ProviderRateLimited"
    /// The provider kept failing (5xx, 529 overloaded) or refused the request ("Server error").
    case providerError = "ProviderError"
    /// The provider could not be reached ("Network error").
    case providerUnreachable = "ProviderUnreachable"
    /// The planner answered in prose, not a stage list: no pipeline was made (the raw text is in
    /// the details).
    case noPipeline = "NoPipeline"

    /// The class the phone uses to pick an action (seed 004).
    public var errorClass: ErrorClass {
        switch self {
        case .authExpired, .authInvalid, .sshAuthFailed: .auth
        case .permissionDenied: .forbidden
        case .conflict, .sshHostKeyMismatch: .conflict
        case .invalidRequest, .notFound, .payloadTooLarge, .unsupportedMediaType, .protocolMismatch,
            .tmuxSessionNotFound, .noPipeline:
            .invalid
        case .networkUnavailable, .rateLimited, .serviceUnavailable, .sshHostUnreachable, .providerRateLimited, .providerError,
            .providerUnreachable:
            .network
        case .serverError, .terminalInitFailed, .providerKeyMissing: .unknown
        }
    }

    /// The HTTP status a REST response with this code carries.
    public var httpStatus: Int {
        switch self {
        case .authExpired, .authInvalid: 401
        case .permissionDenied: 403
        case .notFound, .tmuxSessionNotFound: 404
        case .conflict, .sshHostKeyMismatch: 409
        case .payloadTooLarge: 413
        case .unsupportedMediaType: 415
        case .invalidRequest, .protocolMismatch: 400
        case .rateLimited: 429
        case .serviceUnavailable, .networkUnavailable: 503
        case .sshAuthFailed, .sshHostUnreachable, .terminalInitFailed, .providerError, .providerUnreachable: 502
        case .providerRateLimited: 429
        case .providerKeyMissing: 503
        case .noPipeline: 422
        case .serverError: 500
        }
    }

    /// Whether the same request may succeed if retried unchanged.
    public var isRetryable: Bool {
        switch self.errorClass {
        case .network: true
        case .unknown: self == .serverError
        default: false
        }
    }
}

/// The error classes of seed 004: what the client does about an error.
public enum ErrorClass: String, Sendable, Codable, CaseIterable {
    /// Re-authenticate.
    case auth
    /// The caller may not do this; show an ownership/permission state.
    case forbidden
    /// The state changed under the caller; refresh and decide again.
    case conflict
    /// The request itself is wrong; do not retry it unchanged.
    case invalid
    /// Transient; retry with backoff (honour `retryAfterSeconds`).
    case network
    /// Unexpected; offer "copy debug" with the request id.
    case unknown
}

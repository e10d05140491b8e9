/// A failure the local provider is told to answer with instead of its normal answer, to one
/// request (``AnthropicLocalServer/enqueue(_:)``, `POST /_local/faults`) or to every request
/// whose last user message holds a marker (`[fault:429]`, `[fault:529]`, `[fault:midstream]`,
/// `[fault:slow-first-byte-ms:N]`, `[fault:truncate]`).
///
/// Over HTTP a fault is `{"kind":"status","status":429,"retryAfter":1}`,
/// `{"kind":"errorMidStream"}`, `{"kind":"slowFirstByte","milliseconds":1500}`,
/// `{"kind":"truncatedStream"}` or `{"kind":"dropConnection"}`.
public enum AnthropicLocalFault: Sendable, Hashable, Codable {
    /// An error answer with this status and the API's error type for it (429
    /// `rate_limit_error`, 529 `overloaded_error`, 500 `api_error`, 400 `invalid_request_error`,
    /// 401 `authentication_error`, 403 `permission_error`, 404 `not_found_error`, 413
    /// `request_too_large`; other 4xx `invalid_request_error`, other 5xx `api_error`), with a
    /// `retry-after` header when given.
    case status(Int, retryAfterSeconds: Int?)
    /// Streaming: some deltas, then an `error` event (`overloaded_error`) and the end of the
    /// stream. JSON: 529.
    case errorMidStream
    /// The normal answer, its first byte (the status line) sent only after this long.
    case slowFirstByte(Duration)
    /// Streaming: some deltas, then the end of the stream without `message_stop`. JSON: the
    /// first half of the body.
    case truncatedStream
    /// The connection is closed without an answer.
    case dropConnection

    /// The longest ``slowFirstByte(_:)`` taken from a marker or over HTTP: 2 minutes.
    public static let maximumSlowFirstByte = Duration.seconds(120)

    enum CodingKeys: String, CodingKey {
        case kind
        case status
        case retryAfter
        case milliseconds
    }

    /// Decodes `{"kind": …}` as above.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let kind = try container.decode(String.self, forKey: .kind)
        switch kind {
        case "status":
            let status = try container.decode(Int.self, forKey: .status)
            guard (400...599).contains(status) else {
                throw DecodingError.dataCorruptedError(forKey: .status, in: container, debugDescription: "status must be 400 to 599")
            }
            let retryAfter = try container.decodeIfPresent(Int.self, forKey: .retryAfter)
            self = .status(status, retryAfterSeconds: retryAfter.map { min(max($0, 0), 3600) })
        case "errorMidStream":
            self = .errorMidStream
        case "slowFirstByte":
            let milliseconds = try container.decode(Int.self, forKey: .milliseconds)
            self = .slowFirstByte(min(.milliseconds(max(milliseconds, 0)), Self.maximumSlowFirstByte))
        case "truncatedStream":
            self = .truncatedStream
        case "dropConnection":
            self = .dropConnection
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .kind,
                in: container,
                debugDescription: "kind must be status, errorMidStream, slowFirstByte, truncatedStream or dropConnection"
            )
        }
    }

    /// Encodes as `{"kind": …}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .status(let status, let retryAfter):
            try container.encode("status", forKey: .kind)
            try container.encode(status, forKey: .status)
            try container.encodeIfPresent(retryAfter, forKey: .retryAfter)
        case .errorMidStream:
            try container.encode("errorMidStream", forKey: .kind)
        case .slowFirstByte(let delay):
            try container.encode("slowFirstByte", forKey: .kind)
            let (seconds, attoseconds) = delay.components
            try container.encode(seconds * 1000 + attoseconds / 1_000_000_000_000_000, forKey: .milliseconds)
        case .truncatedStream:
            try container.encode("truncatedStream", forKey: .kind)
        case .dropConnection:
            try container.encode("dropConnection", forKey: .kind)
        }
    }

    /// The API's error type for an error status.
    static func errorType(_ status: Int) -> String {
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

    /// The API's message for an error status.
    static func errorMessage(_ status: Int) -> String {
        switch status {
        case 401: "invalid x-api-key"
        case 403: "Your API key does not have permission to use the specified resource."
        case 404: "The requested resource could not be found."
        case 413: "Request exceeds the maximum allowed number of bytes."
        case 429: "Number of request tokens has exceeded your per-minute rate limit (local fault)"
        case 529: "Overloaded"
        case 500...599: "Internal server error"
        default: "Invalid request (local fault)"
        }
    }
}

/// Why a notification was not sent or a provider key not loaded.
public struct APNsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as a kind a caller can switch on.
    public enum Code: Sendable, Hashable {
        /// The team's signing key (`.p8`) cannot be read or is not a P-256 private key.
        case invalidKey
        /// The notification breaks a rule Apple checks (size, collapse id, token format, push
        /// type and priority); sending it would only earn a 4xx.
        case invalidNotification
        /// No answer within the request's deadline, or the connection failed.
        case transport
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { self.message }
}

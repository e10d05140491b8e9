public import Contracts

/// The error type of ServiceKit's infrastructure (configuration, NATS, JetStream, migrations,
/// keys). A client that meets one sees `ServiceUnavailable` for a dependency that is down and
/// `ServerError` otherwise; the detail stays in the log. Answers about the client's own request
/// are ``APIError``s.
public struct ServiceKitError: Error, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case configuration
            case natsConnection
            case natsOperation
            case natsTimeout
            case natsNoResponders
            case natsClosed
            case jetStream
            case migration
            case token
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A configuration key is missing or malformed; the message names it.
        public static let configuration = Code(.configuration)
        /// The NATS connection could not be established.
        public static let natsConnection = Code(.natsConnection)
        /// A NATS call failed; the message carries the library's status text.
        public static let natsOperation = Code(.natsOperation)
        /// A NATS request or flush got no answer in time.
        public static let natsTimeout = Code(.natsTimeout)
        /// A NATS request reached no subscriber.
        public static let natsNoResponders = Code(.natsNoResponders)
        /// The NATS connection is closed.
        public static let natsClosed = Code(.natsClosed)
        /// The JetStream API answered with an error; see ``ServiceKitError/jetStreamErrorCode``.
        public static let jetStream = Code(.jetStream)
        /// A schema migration failed or the recorded history disagrees with the code.
        public static let migration = Code(.migration)
        /// A token could not be signed, or a key could not be read.
        public static let token = Code(.token)

        /// The client-facing code: `ServiceUnavailable` for a dependency that is down,
        /// `ServerError` for the rest.
        public var errorCode: ErrorCode {
            switch self.base {
            case .natsConnection, .natsTimeout, .natsNoResponders, .natsClosed: .serviceUnavailable
            default: .serverError
            }
        }

        public var description: String { String(describing: self.base) }
    }

    /// What went wrong.
    public let code: Code
    /// A sentence for a person.
    public let message: String
    /// JetStream's `err_code` when ``code`` is ``Code/jetStream``.
    public let jetStreamErrorCode: Int?

    public init(_ code: Code, _ message: String, jetStreamErrorCode: Int? = nil) {
        self.code = code
        self.message = message
        self.jetStreamErrorCode = jetStreamErrorCode
    }

    public var description: String { "ServiceKitError.\(self.code): \(self.message)" }
}

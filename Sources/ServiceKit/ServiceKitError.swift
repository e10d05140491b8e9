public import Contracts

/// The error type of ServiceKit, and the error every service throws toward a client: one with
/// an ``Code/api(_:)`` code becomes the shared error envelope with that code's status.
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
            case api(ErrorCode)
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

        /// An error for the client, answered with this code of the shared taxonomy.
        public static func api(_ code: ErrorCode) -> Code { Code(.api(code)) }

        /// The client-facing code: the API code itself, `ServiceUnavailable` for a dependency
        /// that is down, `ServerError` for the rest.
        public var errorCode: ErrorCode {
            switch self.base {
            case .api(let code): code
            case .natsConnection, .natsTimeout, .natsNoResponders, .natsClosed: .serviceUnavailable
            default: .serverError
            }
        }

        public var description: String {
            switch self.base {
            case .api(let code): code.rawValue
            default: String(describing: self.base)
            }
        }
    }

    /// What went wrong.
    public let code: Code
    /// A sentence for a person.
    public let message: String
    /// JetStream's `err_code` when ``code`` is ``Code/jetStream``.
    public let jetStreamErrorCode: Int?
    /// Field-level problems of an invalid request (field path → problem).
    public let details: [String: String]?
    /// Seconds after which a retry may succeed (`Retry-After`).
    public let retryAfterSeconds: Int?

    public init(
        _ code: Code,
        _ message: String,
        jetStreamErrorCode: Int? = nil,
        details: [String: String]? = nil,
        retryAfterSeconds: Int? = nil
    ) {
        self.code = code
        self.message = message
        self.jetStreamErrorCode = jetStreamErrorCode
        self.details = details
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var description: String { "ServiceKitError.\(self.code): \(self.message)" }
}

/// An error raised by the Contracts module.
public struct ContractsError: Error, Hashable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case invalidSubjectPrefix
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A subject prefix holds an empty token, a wildcard or another forbidden character.
        public static let invalidSubjectPrefix = Code(.invalidSubjectPrefix)

        public var description: String { String(describing: self.base) }
    }

    /// What went wrong.
    public let code: Code
    /// A sentence for a person.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "ContractsError.\(self.code): \(self.message)" }
}

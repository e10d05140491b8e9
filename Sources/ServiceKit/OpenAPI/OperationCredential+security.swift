import Contracts

extension OperationCredential {
    /// The credential table of a document's operations, from the security requirements the
    /// document declares (its contract's generated `operationSecurity`), so that the document is
    /// the only place an operation's credential is written.
    /// - Throws: ``ServiceKitError/Code/configuration`` naming the operation whose requirements
    ///   are not one of the shapes ``init(requirements:operation:)`` reads.
    public static func table(_ security: [String: [[String: [String]]]]) throws(ServiceKitError) -> [String: OperationCredential] {
        var table: [String: OperationCredential] = [:]
        for (operation, requirements) in security {
            table[operation] = try OperationCredential(requirements: requirements, operation: operation)
        }
        return table
    }

    /// One operation's credential from its security requirements (alternatives, any one of
    /// which suffices): none (`security: []`); `accessToken` alternatives naming one scope each
    /// (a token holding any of them); or the one scheme `agentSession` or `ingestKey`.
    public init(requirements: [[String: [String]]], operation: String) throws(ServiceKitError) {
        func unsupported(_ why: String) -> ServiceKitError {
            ServiceKitError(.configuration, "operation \(operation): \(why) (security \(requirements))")
        }
        if requirements.isEmpty {
            self = .none
            return
        }
        if requirements.count == 1, let only = requirements.first, only.count == 1, let (scheme, scopes) = only.first,
            scheme == "agentSession" || scheme == "ingestKey"
        {
            guard scopes.isEmpty else { throw unsupported("\(scheme) takes no scopes") }
            self = scheme == "agentSession" ? .agentSession : .ingestKey
            return
        }
        var anyOf: [Scope] = []
        for alternative in requirements {
            guard alternative.count == 1, let scopes = alternative["accessToken"] else {
                throw unsupported("each alternative must be one accessToken, or the only one agentSession or ingestKey")
            }
            guard scopes.count == 1, let scope = Scope(rawValue: scopes[0]) else {
                throw unsupported("each accessToken alternative names one known scope")
            }
            anyOf.append(scope)
        }
        self = .accessToken(anyOf: anyOf)
    }
}

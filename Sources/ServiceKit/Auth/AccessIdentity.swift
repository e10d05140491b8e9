public import Contracts
public import Foundation
public import Logging

/// Who is calling, from a verified access token. The tenant comes from here, never from a
/// request body.
public struct AccessIdentity: Sendable, Hashable {
    public var tenant: String
    /// The token subject: an operator or device id.
    public var subject: String
    public var scopes: Set<Scope>
    /// When the token was issued (revocation refuses tokens issued before it).
    public var issuedAt: Date
    /// Set when the token is an agent session's (a connector's, on a route that takes them):
    /// the subject is the session, no scope is held, and only the agent's own resources are
    /// within reach.
    public var agentSession: AgentSessionIdentity?

    public init(tenant: String, subject: String, scopes: Set<Scope>, issuedAt: Date = .distantPast) {
        self.tenant = tenant
        self.subject = subject
        self.scopes = scopes
        self.issuedAt = issuedAt
    }

    /// An agent session's identity (``agentSession``), for the routes that take one.
    public init(agentSession: AgentSessionIdentity) {
        self.init(tenant: agentSession.tenant, subject: agentSession.session, scopes: [])
        self.agentSession = agentSession
    }

    /// Throws `PermissionDenied` unless the identity holds `scope`.
    public func require(_ scope: Scope) throws(APIError) {
        try self.require(anyOf: [scope])
    }

    /// Throws `PermissionDenied` unless the identity holds at least one of `scopes` (none
    /// named: nothing is required).
    public func require(anyOf scopes: [Scope]) throws(APIError) {
        guard scopes.isEmpty || scopes.contains(where: self.scopes.contains) else {
            throw APIError(.permissionDenied, "this action needs the \(scopes.map(\.rawValue).joined(separator: " or ")) scope")
        }
    }
}

extension Logger {
    /// This logger with the identity's tenant and subject in its metadata.
    public func with(_ identity: AccessIdentity) -> Logger {
        var logger = self
        logger[metadataKey: "tenant"] = .string(identity.tenant)
        logger[metadataKey: "subject"] = .string(identity.subject)
        return logger
    }
}

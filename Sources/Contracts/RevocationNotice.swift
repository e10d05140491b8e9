/// A revoked credential, announced by control-api to every service that verifies access
/// tokens (JSON on ``Subjects/revocation(tenant:)``): tokens of `subject` in `tenant` issued at
/// or before `revokedAt` are refused from then on, and its open WebSockets are closed.
public struct RevocationNotice: Codable, Sendable, Equatable {
    public var tenant: String
    /// The token subject: a device id.
    public var subject: String
    /// Milliseconds since the epoch.
    public var revokedAt: Int64

    public init(tenant: String, subject: String, revokedAt: Int64) {
        self.tenant = tenant
        self.subject = subject
        self.revokedAt = revokedAt
    }
}

import Foundation

/// One entry of a tenant's audit trail: a control request, or an agent's acknowledgement.
struct AuditEntry: Sendable, Equatable {
    var id: Int64
    var at: Date
    /// The token subject, or `agent:<agentId>` for an acknowledgement.
    var actor: String
    /// `pause`, `resume`, `terminate`, `request`, or `ack:<action>`.
    var action: String
    var target: ControlTarget
    var targetID: String
    var reason: String
    var requestID: String?
    var commandID: String?
    var outcome: String
}

import Foundation

/// What a control request was answered with, stored with it (`control_requests.receipt`, JSON)
/// so a retry of its request id gets the same answer. Its JSON keys are the operators'
/// document's (`requestId`, …): receipts stored before this type existed read back unchanged.
struct ControlReceipt: Sendable, Codable, Equatable {
    /// One command of the request: the agent it went to.
    struct Command: Sendable, Codable, Equatable {
        var commandID: String
        var agentID: String

        enum CodingKeys: String, CodingKey {
            case commandID = "commandId"
            case agentID = "agentId"
        }
    }

    var requestID: String
    var action: CommandAction
    var target: ControlTarget
    var targetID: String
    var commands: [Command]
    var acceptedAt: Date
    /// The request's entry in the audit trail.
    var auditID: Int64

    enum CodingKeys: String, CodingKey {
        case requestID = "requestId"
        case action
        case target
        case targetID = "targetId"
        case commands
        case acceptedAt
        case auditID = "auditId"
    }
}

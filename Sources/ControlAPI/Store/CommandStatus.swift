import Foundation

/// One command and what its agent answered, as stored.
struct CommandStatus: Sendable, Equatable {
    /// `pending` until the agent acknowledges, then its outcome.
    enum State: String, Sendable {
        case pending
        case applied
        case noop
        case rejected
        case failed
        case expired
    }

    var commandID: String
    var agentID: String
    var swarmID: String
    var action: CommandAction
    var state: State
    /// The agent's state after the command, as it reported it.
    var agentState: String?
    var message: String?
    var issuedAt: Date
    var acknowledgedAt: Date?
}

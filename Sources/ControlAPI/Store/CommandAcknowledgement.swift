import Contracts

/// What an agent, or a service for its agents, says it did with a command: recorded once on
/// the command, with its audit entry (``ControlStore/acknowledge(tenant:_:)``).
struct CommandAcknowledgement: Sendable {
    enum Outcome: String, Sendable {
        case applied
        case noop
        case rejected
        case failed
        case expired

        /// A service's acknowledgement's outcome; nil for one this version does not know.
        init?(_ outcome: BusControlOutcome) {
            switch outcome {
            case .applied: self = .applied
            case .noop: self = .noop
            case .rejected: self = .rejected
            case .failed: self = .failed
            case .expired: self = .expired
            default: return nil
            }
        }
    }

    var commandID: String
    var outcome: Outcome
    /// The agent's state now, as it reports it.
    var state: String
    var message: String?
}

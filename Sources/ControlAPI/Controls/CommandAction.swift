import Contracts

/// What a command tells an agent to do, as control-api stores and publishes it. Both documents
/// spell it (the operators' as an enum, the agents' channel as a string); this is the one
/// mapping to and from the bus contract.
enum CommandAction: String, Sendable, Codable, CaseIterable {
    case pause
    case resume
    case terminate
    /// A worker request: a line for the worker (the command's input).
    case request

    /// The bus contract's action.
    var bus: BusControlAction {
        switch self {
        case .pause: .pause
        case .resume: .resume
        case .terminate: .terminate
        case .request: .request
        }
    }

    /// The action of a command on the bus; nil for one this version does not know.
    init?(_ bus: BusControlAction) {
        switch bus {
        case .pause: self = .pause
        case .resume: self = .resume
        case .terminate: self = .terminate
        case .request: self = .request
        default: return nil
        }
    }
}

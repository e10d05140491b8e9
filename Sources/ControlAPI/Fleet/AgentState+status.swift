import ControlAPIContract
import Foundation

extension Components.Schemas.AgentState {
    /// An agent's state: what its last `state` event said (free-form, mapped), unless it has
    /// been silent longer than `offlineAfter` seconds; a terminated agent stays terminated.
    static func of(reported: String?, silentFor: TimeInterval, offlineAfter: TimeInterval) -> Self {
        let reported = reported?.lowercased()
        switch reported {
        case "terminated", "exited", "completed", "done", "killed": return .terminated
        default: break
        }
        if silentFor > offlineAfter { return .offline }
        switch reported {
        case nil, "idle": return .idle
        case "paused", "stopped", "suspended": return .paused
        case "waiting", "waiting_approval", "blocked": return .waiting
        case "error", "failed", "crashed": return .error
        default: return .running
        }
    }

    /// Seed 000's status for it: the four it names as they are; no work reported yet waits, a
    /// silent agent needs a look (error), a terminated one is stopped (paused).
    var status: Components.Schemas.AgentStatus {
        switch self {
        case .running: .running
        case .paused, .terminated: .paused
        case .waiting, .idle: .waiting
        case .error, .offline: .error
        }
    }
}

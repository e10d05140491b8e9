import ControlAPIContract
import EventLog
import Foundation
import ServiceKit

/// How the fleet index's records read in the operators' document: an agent's state (its
/// reported one unless it went silent), an agent, the swarms, and the web console's links.
/// The fleet and the controls (workers) both answer with them.
struct FleetViews: Sendable {
    /// How long an agent may be silent before it is offline.
    let offlineAfter: TimeInterval
    /// The web console's base, for the links in answers.
    let webBaseURL: String

    /// An agent's state: its reported state, unless it has gone silent.
    func state(of agent: FleetAgent, now: Date) -> Components.Schemas.AgentState {
        .of(reported: agent.state, silentFor: now.timeIntervalSince(agent.lastSeenAt), offlineAfter: self.offlineAfter)
    }

    func agent(_ record: FleetAgent, lastCommand: CommandStatus?, now: Date) -> Components.Schemas.Agent {
        let hour = (events: record.eventsLastHour, errors: record.errorsLastHour)
        let state = self.state(of: record, now: now)
        return Components.Schemas.Agent(
            id: record.agentID,
            swarmId: record.swarmID,
            status: state.status,
            state: state,
            taskSummary: record.taskSummary,
            updatedAt: record.stateChangedAt,
            lastSeenAt: record.lastSeenAt,
            eventsLastHour: hour.events,
            errorsLastHour: hour.errors,
            errorRate: hour.events == 0 ? 0 : Double(hour.errors) / Double(hour.events),
            lastCommand: lastCommand.map(Components.Schemas.CommandStatus.init),
            acceptsRequests: record.acceptsRequests,
            terminal: record.tmuxSession.map { Components.Schemas.AgentTerminal(tmuxSession: $0, host: record.host) },
            webUrl: self.webURL("agents", record.agentID)
        )
    }

    /// The swarms of a tenant's agents, most recently active first.
    func swarms(of agents: [FleetAgent], now: Date) -> [Components.Schemas.Swarm] {
        let bySwarm = Dictionary(grouping: agents, by: \.swarmID)
        return bySwarm.map { id, members in
            let states = members.map { self.state(of: $0, now: now) }
            let active = states.filter { $0 != .terminated && $0 != .offline }.count
            let events = members.reduce(0) { $0 + $1.eventsLastHour }
            let errors = members.reduce(0) { $0 + $1.errorsLastHour }
            return Components.Schemas.Swarm(
                id: id,
                name: id,
                status: active > 0 ? .active : .idle,
                activeAgents: active,
                totalAgents: members.count,
                errorRate: events == 0 ? 0 : Double(errors) / Double(events),
                eventsLastHour: events,
                updatedAt: members.map(\.lastSeenAt).max() ?? now,
                webUrl: self.webURL("swarms", id)
            )
        }.sorted { ($0.updatedAt, $1.id) > ($1.updatedAt, $0.id) }
    }

    func webURL(_ collection: String, _ id: String) -> String {
        WebLink.url(base: self.webBaseURL, collection, id)
    }

    /// A worker: an agent of the fleet as seed 004 lists it, with its registration's owner.
    func worker(_ record: FleetAgent, owner: String?, now: Date) -> Components.Schemas.Worker {
        let state = self.state(of: record, now: now)
        return Components.Schemas.Worker(
            id: record.agentID,
            swarmId: record.swarmID,
            status: state.status,
            state: state,
            taskSummary: record.taskSummary,
            updatedAt: record.stateChangedAt,
            lastSeenAt: record.lastSeenAt,
            webUrl: self.webURL("workers", record.agentID),
            owner: owner
        )
    }
}

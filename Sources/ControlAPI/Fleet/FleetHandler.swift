import Contracts
import ControlAPIContract
import EventLog
import Foundation
import ServiceKit

/// The fleet as operators read it: the overview, swarms, agents, an agent's newest events and
/// a trace (`+events`), from the fleet index, ingest's event log and health-monitor.
struct FleetHandler: Sendable {
    let fleet: FleetIndex
    /// Ingest's event log, read for an agent's newest events.
    let eventLog: EventLogReader
    /// An agent's last command.
    let store: ControlStore
    /// What health-monitor knows, for the overview and agent detail.
    let health: HealthSummaries
    let views: FleetViews
}

extension FleetHandler {
    func getOverview(_ input: Operations.GetOverview.Input) async throws -> Operations.GetOverview.Output {
        let identity = try Caller.person()
        let now = Date()
        let agents = try await self.fleet.agents(tenant: identity.tenant)
        let swarms = self.views.swarms(of: agents, now: now)
        let active = swarms.filter { $0.status == .active }
        var byStatus: [String: Int] = [:]
        var byState: [String: Int] = [:]
        for agent in agents {
            let state = self.views.state(of: agent, now: now)
            byState[state.rawValue, default: 0] += 1
            byStatus[state.status.rawValue, default: 0] += 1
        }
        let events = agents.reduce(0) { $0 + $1.eventsLastHour }
        let errors = agents.reduce(0) { $0 + $1.errorsLastHour }
        let cards = Components.Schemas.SummaryCards(
            activeSwarms: active.count,
            agents: agents.count,
            agentsByStatus: .init(additionalProperties: byStatus),
            agentsByState: .init(additionalProperties: byState),
            eventsLastHour: events,
            errorsLastHour: errors,
            errorRate: events == 0 ? 0 : Double(errors) / Double(events)
        )
        let health = await self.health.overview(tenant: identity.tenant)
        let rollups = health.summary?.rollups
        return .ok(
            .init(
                body: .json(
                    .init(
                        summaryCards: cards,
                        activeSwarms: Array(active.prefix(50)),
                        activeIncidents: rollups?.activeIncidents ?? [],
                        healthStale: health.stale,
                        healthAsOf: health.asOf,
                        health: rollups,
                        generatedAt: now
                    )
                )
            )
        )
    }

    func listSwarms(_ input: Operations.ListSwarms.Input) async throws -> Operations.ListSwarms.Output {
        let identity = try Caller.person()
        var swarms = self.views.swarms(of: try await self.fleet.agents(tenant: identity.tenant), now: Date())
        if let status = input.query.status { swarms = swarms.filter { $0.status == status } }
        return .ok(.init(body: .json(.init(swarms: swarms))))
    }

    func getSwarm(_ input: Operations.GetSwarm.Input) async throws -> Operations.GetSwarm.Output {
        let identity = try Caller.person()
        try InputCheck.id(input.path.swarmId, "swarmId")
        let now = Date()
        let agents = try await self.fleet.agents(tenant: identity.tenant, swarm: input.path.swarmId)
        guard let swarm = self.views.swarms(of: agents, now: now).first else {
            throw APIError(.notFound, "no swarm \(input.path.swarmId)")
        }
        let members = agents.sorted { $0.agentID < $1.agentID }.map { self.views.agent($0, lastCommand: nil, now: now) }
        return .ok(.init(body: .json(.init(swarm: swarm, agents: members))))
    }

    func getAgent(_ input: Operations.GetAgent.Input) async throws -> Operations.GetAgent.Output {
        let identity = try Caller.person()
        try InputCheck.id(input.path.agentId, "agentId")
        guard let record = try await self.fleet.agent(tenant: identity.tenant, id: input.path.agentId) else {
            throw APIError(.notFound, "no agent \(input.path.agentId)")
        }
        async let health = self.health.summary(tenant: identity.tenant, agent: record.agentID, swarm: record.swarmID)
        let last = try await self.store.lastCommand(tenant: identity.tenant, agentID: record.agentID)
        var agent = self.views.agent(record, lastCommand: last, now: Date())
        agent.health = await health?.agentHealth
        return .ok(.init(body: .json(agent)))
    }
}

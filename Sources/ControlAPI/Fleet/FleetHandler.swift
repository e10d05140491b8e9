import Contracts
import ControlAPIContract
import Foundation
import ServiceKit

extension ControlAPIHandler {
    func getOverview(_ input: Operations.GetOverview.Input) async throws -> Operations.GetOverview.Output {
        let identity = try Caller.person()
        let now = Date()
        let agents = self.fleet.agents(tenant: identity.tenant)
        let swarms = self.swarms(of: agents, now: now)
        let active = swarms.filter { $0.status == .active }
        var byStatus: [String: Int] = [:]
        var byState: [String: Int] = [:]
        for agent in agents {
            let state = self.state(of: agent, now: now)
            byState[state.rawValue, default: 0] += 1
            byStatus[state.status.rawValue, default: 0] += 1
        }
        let (events, errors) = agents.reduce(into: (Int64(0), Int64(0))) { total, agent in
            let hour = agent.minutes.lastHour(now: now)
            total.0 += hour.events
            total.1 += hour.errors
        }
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
        var swarms = self.swarms(of: self.fleet.agents(tenant: identity.tenant), now: Date())
        if let status = input.query.status { swarms = swarms.filter { $0.status == status } }
        return .ok(.init(body: .json(.init(swarms: swarms))))
    }

    func getSwarm(_ input: Operations.GetSwarm.Input) async throws -> Operations.GetSwarm.Output {
        let identity = try Caller.person()
        try InputCheck.id(input.path.swarmId, "swarmId")
        let now = Date()
        let agents = self.fleet.agents(tenant: identity.tenant, swarm: input.path.swarmId)
        guard let swarm = self.swarms(of: agents, now: now).first else {
            throw APIError(.notFound, "no swarm \(input.path.swarmId)")
        }
        let members = agents.sorted { $0.agentID < $1.agentID }.map { self.agent($0, lastCommand: nil, now: now) }
        return .ok(.init(body: .json(.init(swarm: swarm, agents: members))))
    }

    func getAgent(_ input: Operations.GetAgent.Input) async throws -> Operations.GetAgent.Output {
        let identity = try Caller.person()
        try InputCheck.id(input.path.agentId, "agentId")
        guard let record = self.fleet.agent(tenant: identity.tenant, id: input.path.agentId) else {
            throw APIError(.notFound, "no agent \(input.path.agentId)")
        }
        async let health = self.health.summary(tenant: identity.tenant, agent: record.agentID, swarm: record.swarmID)
        let last = try await self.store.lastCommand(tenant: identity.tenant, agentID: record.agentID)
        var agent = self.agent(record, lastCommand: last, now: Date())
        agent.health = await health?.agentHealth
        return .ok(.init(body: .json(agent)))
    }

    // MARK: Views

    /// An agent's state: its reported state, unless it has gone silent.
    func state(of agent: FleetIndex.AgentRecord, now: Date) -> Components.Schemas.AgentState {
        .of(reported: agent.state, silentFor: now.timeIntervalSince(agent.lastSeenAt), offlineAfter: TimeInterval(self.settings.offlineSeconds))
    }

    func agent(_ record: FleetIndex.AgentRecord, lastCommand: Components.Schemas.CommandStatus?, now: Date) -> Components.Schemas.Agent {
        let hour = record.minutes.lastHour(now: now)
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
            lastCommand: lastCommand,
            acceptsRequests: record.acceptsRequests,
            terminal: record.tmuxSession.map { Components.Schemas.AgentTerminal(tmuxSession: $0, host: record.host) },
            webUrl: self.webURL("agents", record.agentID)
        )
    }

    /// The swarms of a tenant's agents, most recently active first.
    func swarms(of agents: [FleetIndex.AgentRecord], now: Date) -> [Components.Schemas.Swarm] {
        let bySwarm = Dictionary(grouping: agents, by: \.swarmID)
        return bySwarm.map { id, members in
            let states = members.map { self.state(of: $0, now: now) }
            let active = states.filter { $0 != .terminated && $0 != .offline }.count
            let (events, errors) = members.reduce(into: (Int64(0), Int64(0))) { total, agent in
                let hour = agent.minutes.lastHour(now: now)
                total.0 += hour.events
                total.1 += hour.errors
            }
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
        WebLink.url(base: self.settings.webBaseURL, collection, id)
    }
}

import Foundation
import HealthMonitorContract
import ServiceKit

extension HealthHandler {
    func listContextHealth(_ input: Operations.ListContextHealth.Input) async throws -> Operations.ListContextHealth.Output {
        let person = try Caller.person()
        let query = input.query
        try InputCheck.range(query.limit, "limit", 1...200)
        if let swarm = query.swarmId { try InputCheck.id(swarm, "swarmId") }
        if let agent = query.agentId { try InputCheck.id(agent, "agentId") }
        let docs = try await self.rollups.list(
            tenant: person.tenant,
            kind: .context,
            swarm: query.swarmId,
            agent: query.agentId,
            limit: query.limit ?? 50
        )
        let sessions = try docs.map { doc in
            var health = try Self.decode(Components.Schemas.ContextHealth.self, doc)
            health.series = nil
            health.webUrl = WebLink.url(base: self.settings.webBaseURL, "sessions", health.sessionId)
            return health
        }
        return .ok(.init(body: .json(.init(sessions: sessions))))
    }

    func getContextHealth(_ input: Operations.GetContextHealth.Input) async throws -> Operations.GetContextHealth.Output {
        let person = try Caller.person()
        try InputCheck.id(input.path.sessionId, "sessionId")
        guard let doc = try await self.rollups.rollup(tenant: person.tenant, kind: .context, key: input.path.sessionId) else {
            throw APIError(.notFound, "no session \(input.path.sessionId.prefix(64))")
        }
        var health = try Self.decode(Components.Schemas.ContextHealth.self, doc)
        health.webUrl = WebLink.url(base: self.settings.webBaseURL, "sessions", health.sessionId)
        return .ok(.init(body: .json(health)))
    }

    func listSkillHealth(_ input: Operations.ListSkillHealth.Input) async throws -> Operations.ListSkillHealth.Output {
        let person = try Caller.person()
        let query = input.query
        try InputCheck.range(query.limit, "limit", 1...200)
        if let swarm = query.swarmId { try InputCheck.id(swarm, "swarmId") }
        let hour = (query.window ?? ._1h) == ._1h
        let docs = try await self.rollups.list(tenant: person.tenant, kind: .skill, swarm: query.swarmId, limit: 1000)
        var skills = try docs.map { doc in
            let rollup = try Self.decode(HealthRollup.Skill.self, doc)
            return hour ? rollup.hour : rollup.day
        }
        skills.sort { ($0.errorRate, $0.calls, $0.skillId) > ($1.errorRate, $1.calls, $1.skillId) }
        return .ok(.init(body: .json(.init(window: hour ? ._1h : ._24h, skills: Array(skills.prefix(query.limit ?? 50))))))
    }

    func getSkillHealth(_ input: Operations.GetSkillHealth.Input) async throws -> Operations.GetSkillHealth.Output {
        let person = try Caller.person()
        try InputCheck.text(input.path.skillId, "skillId", max: 64)
        guard let doc = try await self.rollups.rollup(tenant: person.tenant, kind: .skill, key: input.path.skillId) else {
            throw APIError(.notFound, "no skill \(input.path.skillId.prefix(64))")
        }
        let rollup = try Self.decode(HealthRollup.Skill.self, doc)
        let hour = (input.query.window ?? ._1h) == ._1h
        let related = try await self.incidents.list(
            tenant: person.tenant,
            statuses: Incident.Status.allCases,
            swarm: nil,
            skill: input.path.skillId,
            limit: 20,
            before: nil
        )
        return .ok(
            .init(
                body: .json(
                    .init(
                        skill: hour ? rollup.hour : rollup.day,
                        window: hour ? ._1h : ._24h,
                        series: hour ? rollup.hourSeries : rollup.daySeries,
                        incidents: related.map { $0.contract(webURL: self.messages.webURL($0)) }
                    )
                )
            )
        )
    }

    func listSwarmHealth(_ input: Operations.ListSwarmHealth.Input) async throws -> Operations.ListSwarmHealth.Output {
        let person = try Caller.person()
        let docs = try await self.rollups.list(tenant: person.tenant, kind: .swarm, limit: 200)
        return .ok(.init(body: .json(.init(swarms: try docs.map { try Self.decode(Components.Schemas.SwarmHealth.self, $0) }))))
    }
}

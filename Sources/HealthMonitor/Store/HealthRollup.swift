import Foundation
import HealthMonitorContract

/// One rollup the API serves: a session's context, a skill, or a swarm, rendered from the
/// windows as the contract's JSON (rows of the `rollups` table).
struct HealthRollup: Sendable {
    enum Kind: String, Sendable {
        case context
        case skill
        case swarm
    }

    /// A skill's document: both windows and their series.
    struct Skill: Codable, Sendable {
        var hour: Components.Schemas.SkillHealth
        var day: Components.Schemas.SkillHealth
        var hourSeries: [Components.Schemas.SkillPoint]
        var daySeries: [Components.Schemas.SkillPoint]
    }

    var tenant: String
    var kind: Kind
    var key: String
    var swarmID: String
    var agentID: String
    var doc: Data

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return encoder
    }()
    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }()

    /// The rollup of what `touched` names, as it is at `now`; nil when it is gone.
    init?(_ tenant: TenantHealth, _ touched: TenantHealth.Touched, now: Int64) {
        self.tenant = tenant.tenant
        switch touched {
        case .session(let id):
            guard let session = tenant.sessions[id] else { return nil }
            let thresholds = tenant.thresholds.effective(swarm: session.swarmID)
            let health = Components.Schemas.ContextHealth(
                sessionId: id,
                swarmId: session.swarmID,
                agentId: session.agentID,
                model: session.model,
                tokenUsage: session.tokens,
                maxTokens: session.window,
                percentUsed: (session.percentUsed * 10).rounded() / 10,
                redundancyScore: (session.redundancyScore * 1000).rounded() / 1000,
                compactions: session.compactions,
                warnings: session.warnings(nearCapacityPercent: thresholds.nearCapacityPercent, redundancy: thresholds.redundancyScore)
                    .compactMap { .init(rawValue: $0) },
                updatedAt: Date(milliseconds: session.updatedAt),
                series: session.series.map { .init(at: Date(milliseconds: $0.at), tokens: $0.tokens) }
            )
            guard let doc = try? Self.encoder.encode(health) else { return nil }
            (self.kind, self.key, self.swarmID, self.agentID, self.doc) = (.context, id, session.swarmID, session.agentID, doc)
        case .skill(let id):
            guard let skill = tenant.skills[id] else { return nil }
            func health(hour: Bool) -> Components.Schemas.SkillHealth {
                let stats = skill.stats(hour: hour, now: now)
                return .init(
                    skillId: id,
                    name: skill.tool,
                    swarmId: skill.swarmID,
                    calls: stats.calls,
                    successRate: (stats.successRate * 1000).rounded() / 1000,
                    errorRate: (stats.errorRate * 1000).rounded() / 1000,
                    p95LatencyMs: stats.p95LatencyMs.map { $0.rounded() },
                    spiking: skill.spiking,
                    updatedAt: Date(milliseconds: max(skill.lastCallAt, 0))
                )
            }
            func series(hour: Bool) -> [Components.Schemas.SkillPoint] {
                skill.series(hour: hour, now: now).map {
                    .init(
                        start: Date(milliseconds: $0.start),
                        calls: $0.stats.calls,
                        errors: $0.stats.errors,
                        errorRate: ($0.stats.errorRate * 1000).rounded() / 1000,
                        p95LatencyMs: $0.stats.p95LatencyMs.map { $0.rounded() }
                    )
                }
            }
            let document = Skill(hour: health(hour: true), day: health(hour: false), hourSeries: series(hour: true), daySeries: series(hour: false))
            guard let doc = try? Self.encoder.encode(document) else { return nil }
            (self.kind, self.key, self.swarmID, self.agentID, self.doc) = (.skill, id, skill.swarmID, "", doc)
        case .swarm(let id):
            guard let swarm = tenant.swarms[id] else { return nil }
            let thresholds = tenant.thresholds.effective(swarm: id)
            let rate = swarm.errorRate(now: now)
            let stuck = tenant.stuckAgents(swarm: id)
            let status: Components.Schemas.SwarmHealth.StatusPayload =
                if swarm.events(now: now) >= TenantHealth.minimumSwarmEvents && rate >= thresholds.swarmErrorRate {
                    .critical
                } else if stuck > 0 || (swarm.events(now: now) >= TenantHealth.minimumSwarmEvents && rate >= thresholds.swarmErrorRate / 2) {
                    .degraded
                } else {
                    .healthy
                }
            let health = Components.Schemas.SwarmHealth(
                swarmId: id,
                status: status,
                errorRate: (rate * 1000).rounded() / 1000,
                eventsPerMinute: swarm.eventsPerMinute(now: now),
                costPerHourUsd: (swarm.costPerHour(now: now) * 100).rounded() / 100,
                stuckAgents: stuck,
                updatedAt: Date(milliseconds: now)
            )
            guard let doc = try? Self.encoder.encode(health) else { return nil }
            (self.kind, self.key, self.swarmID, self.agentID, self.doc) = (.swarm, id, id, "", doc)
        case .agent:
            return nil
        }
    }
}

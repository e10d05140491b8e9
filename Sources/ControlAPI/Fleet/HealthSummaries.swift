import Contracts
import ControlAPIContract
import Foundation
import Logging
import ServiceKit
import Synchronization

/// Asks health-monitor for a tenant's health (``Subjects/healthSummary``, request/reply) when
/// the overview or an agent is built: never by reading health's tables. Health is an addition:
/// without an answer within ``timeout`` an agent's answer has no `health`, and the overview shows
/// the tenant's last answer, marked stale.
final class HealthSummaries: Sendable {
    let connection: NATSConnection
    let subjects: Subjects
    let logger: Logger
    /// Each tenant's last overview answer (bounded by ``rememberedTenants``).
    private let last = Mutex(LastAnswers<HealthSummary>(capacity: HealthSummaries.rememberedTenants))

    static let timeout: Duration = .milliseconds(300)
    /// The tenants whose last answer a replica keeps: an answer holds at most 50 incidents and
    /// 200 swarms, some 50 KB, so 50 MB at worst.
    static let rememberedTenants = 1024

    init(connection: NATSConnection, subjects: Subjects, logger: Logger) {
        self.connection = connection
        self.subjects = subjects
        self.logger = logger
    }

    /// The overview's health: health-monitor's answer, or when it does not answer in time, its
    /// last answer for the tenant (`stale`), if any.
    func overview(tenant: String) async -> (summary: HealthSummary?, asOf: Date?, stale: Bool) {
        // Kept as of the question, so an answer to an earlier question that arrives late does
        // not replace a newer one.
        let asked = Date()
        if let summary = await self.summary(tenant: tenant) {
            self.last.withLock { $0.record(summary, for: tenant, at: asked) }
            return (summary, asked, false)
        }
        let last = self.last.withLock { $0.last(for: tenant) }
        return (last?.value, last?.at, true)
    }

    func summary(tenant: String, agent: String? = nil, swarm: String? = nil) async -> HealthSummary? {
        do {
            let request = try JSONEncoder().encode(HealthSummary.Request(tenant: tenant, agentId: agent, swarmId: swarm))
            let reply = try await self.connection.request(Array(request), to: self.subjects.healthSummary, timeout: Self.timeout)
            return try JSONDecoder().decode(HealthSummary.self, from: Data(reply.payload))
        } catch {
            self.logger.debug("no health summary", metadata: ["error": "\(String(reflecting: error))"])
            return nil
        }
    }
}

extension HealthSummary {
    /// The overview's rollups.
    var rollups: Components.Schemas.HealthRollups {
        Components.Schemas.HealthRollups(
            activeIncidents: self.activeIncidents.map {
                .init(
                    id: $0.incidentId,
                    rule: $0.rule,
                    severity: $0.severity,
                    summary: $0.summary,
                    status: .firing,
                    swarmId: $0.swarmId,
                    agentId: $0.agentId,
                    createdAt: Date(milliseconds: $0.firedAt),
                    acknowledged: $0.acknowledged,
                    webUrl: $0.webUrl
                )
            },
            contextRisk: self.contextRisk,
            skillFailureRate: self.skillFailureRate,
            swarms: self.swarms.map {
                .init(
                    swarmId: $0.swarmId,
                    status: $0.status,
                    errorRate: $0.errorRate,
                    eventsPerMinute: $0.eventsPerMinute,
                    stuckAgents: $0.stuckAgents
                )
            }
        )
    }

    /// An agent's health.
    var agentHealth: Components.Schemas.AgentHealth {
        Components.Schemas.AgentHealth(
            context: (self.agentContext ?? []).map {
                .init(sessionId: $0.sessionId, percentUsed: $0.percentUsed, redundancyScore: $0.redundancyScore, warnings: $0.warnings)
            },
            topFailingSkills: (self.agentSkills ?? []).map {
                .init(skillId: $0.skillId, name: $0.name, calls: $0.calls, errorRate: $0.errorRate, p95LatencyMs: $0.p95LatencyMs)
            }
        )
    }
}

import Contracts
import ControlAPIContract
import Foundation
import Logging
import ServiceKit

/// Asks health-monitor for a tenant's health (``Subjects/healthSummary``, request/reply) when
/// the overview or an agent is built: never by reading health's tables. Health is an addition:
/// without an answer within ``timeout`` the answer simply has no `health`.
struct HealthSummaries: Sendable {
    let connection: NATSConnection
    let subjects: Subjects
    let logger: Logger

    static let timeout: Duration = .milliseconds(300)

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

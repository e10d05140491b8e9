import Contracts
import Foundation
import HealthMonitorContract
import Logging
import ServiceKit
import ServiceLifecycle

/// Answers control-api's questions on ``Subjects/healthSummary`` (JSON ``HealthSummary``) from
/// health's tables, so any replica can answer for any tenant: the tenant's firing incidents
/// (at most 50, newest first), its rollups (context risk, skill failure rate, swarms) and, for
/// an agent, its sessions' context and its swarm's skills.
final class HealthSummaryResponder: Service, Sendable {
    let connection: NATSConnection
    let subjects: Subjects
    let incidents: IncidentStore
    let rollups: RollupStore
    let messages: IncidentMessages
    let logger: Logger
    /// The subject's responder (readiness `health-summaries`).
    let responder: NATSResponder

    /// Questions answered at once per replica (each reads the tables four times, one after the
    /// other; the pool, `postgres.max-connections`, queues those past its connections). Past it
    /// the subscription's buffer holds a short backlog (64, or 256 KiB; newer ones are dropped):
    /// questions are answered oldest first, so a long backlog would answer every one after
    /// control-api stopped waiting, and hold a graceful shutdown while it drains. Without an
    /// answer within control-api's 300 ms, the overview shows the tenant's last summary, marked
    /// stale, and an agent has no `health`.
    static let maxConcurrent = 16

    init(connection: NATSConnection, subjects: Subjects, incidents: IncidentStore, rollups: RollupStore, messages: IncidentMessages, logger: Logger) {
        self.connection = connection
        self.subjects = subjects
        self.incidents = incidents
        self.rollups = rollups
        self.messages = messages
        self.logger = logger
        self.responder = NATSResponder(
            name: "health-summaries",
            connection: connection,
            subject: subjects.healthSummary,
            queue: "health-monitor",
            buffering: .dropNewest(maxMessages: 64, maxBytes: 256 << 10),
            maxConcurrent: Self.maxConcurrent,
            logger: logger
        )
    }

    func run() async throws {
        try await self.responder.serve { message in
            guard let reply = message.reply else { return }
            do {
                let request = try JSONDecoder().decode(HealthSummary.Request.self, from: Data(message.payload))
                guard EntityID.problem(request.tenant, field: "tenant") == nil else { return }
                let summary = try await self.summary(request)
                try self.connection.publish(Array(try JSONEncoder().encode(summary)), to: reply)
            } catch {
                self.logger.warning("health summary not answered", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    func summary(_ request: HealthSummary.Request) async throws -> HealthSummary {
        let tenant = request.tenant
        let firing = try await self.incidents.list(tenant: tenant, statuses: [.firing], swarm: nil, skill: nil, limit: 50, before: nil)
        let contexts = try await self.rollups.list(tenant: tenant, kind: .context, limit: 200).compactMap {
            try? HealthRollup.decoder.decode(Components.Schemas.ContextHealth.self, from: $0)
        }
        let skills = try await self.rollups.list(tenant: tenant, kind: .skill, limit: 500).compactMap {
            try? HealthRollup.decoder.decode(HealthRollup.Skill.self, from: $0).hour
        }
        let swarms = try await self.rollups.list(tenant: tenant, kind: .swarm, limit: 200).compactMap {
            try? HealthRollup.decoder.decode(Components.Schemas.SwarmHealth.self, from: $0)
        }
        let calls = skills.reduce(0) { $0 + $1.calls }
        let failures = skills.reduce(0.0) { $0 + Double($1.calls) * $1.errorRate }
        var summary = HealthSummary(
            activeIncidents: firing.map {
                HealthSummary.Incident(
                    incidentId: $0.id,
                    rule: $0.rule,
                    severity: $0.severity,
                    summary: $0.summary,
                    swarmId: $0.swarmID,
                    agentId: $0.agentID,
                    firedAt: $0.firedAt.milliseconds,
                    acknowledged: $0.acknowledgedAt != nil,
                    webUrl: self.messages.webURL($0)
                )
            },
            contextRisk: contexts.map(\.percentUsed).max(),
            skillFailureRate: calls > 0 ? (failures / Double(calls) * 1000).rounded() / 1000 : nil,
            swarms: swarms.map {
                HealthSummary.Swarm(
                    swarmId: $0.swarmId,
                    status: $0.status.rawValue,
                    errorRate: $0.errorRate,
                    eventsPerMinute: $0.eventsPerMinute,
                    stuckAgents: $0.stuckAgents
                )
            }
        )
        if let agent = request.agentId {
            let own = contexts.filter { $0.agentId == agent }
            summary.agentContext = own.map {
                HealthSummary.Context(
                    sessionId: $0.sessionId,
                    agentId: $0.agentId,
                    percentUsed: $0.percentUsed,
                    redundancyScore: $0.redundancyScore,
                    warnings: $0.warnings.map(\.rawValue)
                )
            }
            let swarmIDs = request.swarmId.map { [$0] } ?? Set(own.map(\.swarmId))
            summary.agentSkills = skills.filter { swarmIDs.isEmpty || swarmIDs.contains($0.swarmId) }
                .sorted { ($0.errorRate, $0.calls) > ($1.errorRate, $1.calls) }
                .prefix(10)
                .map {
                    HealthSummary.Skill(
                        skillId: $0.skillId,
                        name: $0.name,
                        swarmId: $0.swarmId,
                        calls: $0.calls,
                        errorRate: $0.errorRate,
                        p95LatencyMs: $0.p95LatencyMs
                    )
                }
        }
        return summary
    }
}

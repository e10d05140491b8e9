import Foundation
import HealthMonitorContract
import ServiceKit

extension HealthHandler {
    func listIncidents(_ input: Operations.ListIncidents.Input) async throws -> Operations.ListIncidents.Output {
        let person = try Caller.person()
        let query = input.query
        try InputCheck.range(query.limit, "limit", 1...200)
        if let swarm = query.swarmId { try InputCheck.id(swarm, "swarmId") }
        var cursor: PageCursor?
        if let text = query.cursor {
            guard let parsed = PageCursor(text) else { throw APIError(.invalidRequest, "cursor is not a nextCursor of this list") }
            cursor = parsed
        }
        let statuses: [Incident.Status] =
            switch query.status ?? .firing {
            case .firing: [.firing]
            case .resolved: [.resolved]
            case .all: Incident.Status.allCases
            }
        let limit = query.limit ?? 50
        let incidents = try await self.incidents.list(
            tenant: person.tenant,
            statuses: statuses,
            swarm: query.swarmId,
            skill: nil,
            limit: limit,
            before: cursor.map { ($0.at, $0.id) }
        )
        let next = incidents.count == limit ? incidents.last.map { PageCursor(at: $0.firedAt, id: $0.id).text } : nil
        return .ok(.init(body: .json(.init(incidents: incidents.map { $0.contract(webURL: self.messages.webURL($0)) }, nextCursor: next))))
    }

    func getIncident(_ input: Operations.GetIncident.Input) async throws -> Operations.GetIncident.Output {
        let person = try Caller.person()
        let id = input.path.incidentId
        try InputCheck.text(id, "incidentId", max: 64)
        guard let incident = try await self.incidents.incident(tenant: person.tenant, id: id) else { throw Self.notFound(id) }
        let timeline = try await self.incidents.timeline(tenant: person.tenant, id: id)
        return .ok(
            .init(
                body: .json(
                    .init(
                        incident: incident.contract(webURL: self.messages.webURL(incident)),
                        timeline: timeline.map { .init(at: $0.at, action: .init(rawValue: $0.action) ?? .fired, actor: $0.actor, detail: $0.detail) }
                    )
                )
            )
        )
    }

    func acknowledgeIncident(_ input: Operations.AcknowledgeIncident.Input) async throws -> Operations.AcknowledgeIncident.Output {
        let person = try Caller.person()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        let id = input.path.incidentId
        try InputCheck.text(id, "incidentId", max: 64)
        try InputCheck.text(body.reason, "reason", max: 1000)
        guard let incident = try await self.incidents.acknowledge(tenant: person.tenant, id: id, actor: person.subject, reason: body.reason) else {
            throw Self.notFound(id)
        }
        return .ok(.init(body: .json(incident.contract(webURL: self.messages.webURL(incident)))))
    }

    static func notFound(_ id: String) -> APIError {
        APIError(.notFound, "no incident \(id.prefix(64))")
    }
}

extension Incident {
    func contract(webURL: String) -> Components.Schemas.Incident {
        Components.Schemas.Incident(
            id: self.id,
            rule: self.rule,
            severity: .init(rawValue: self.severity) ?? .warning,
            summary: self.summary,
            status: self.status == .firing ? .firing : .resolved,
            swarmId: self.swarmID,
            agentId: self.agentID,
            sessionId: self.sessionID,
            skillId: self.skillID,
            createdAt: self.firedAt,
            resolvedAt: self.resolvedAt,
            acknowledged: self.acknowledgedAt != nil,
            acknowledgedBy: self.acknowledgedBy,
            acknowledgedAt: self.acknowledgedAt,
            acknowledgeReason: self.acknowledgeReason,
            webUrl: webURL
        )
    }
}

import Contracts
import Foundation
import ServiceKit
import SwiftProtobuf

/// What the outbox sends when an incident changes: the `incident` event for the tenant's log
/// (and so the live stream) and, when it fires or resolves, the notice for the notifier.
/// Rendered in the transaction that changes the incident, sent after it commits.
struct IncidentMessages: Sendable {
    let webBaseURL: String

    /// One row of the outbox.
    struct Item: Sendable, Equatable {
        enum Kind: String, Sendable {
            /// A `BusServiceEvent` for ingest.
            case event
            /// An ``IncidentNotice`` (JSON) for the incidents stream.
            case notice
        }

        var kind: Kind
        var payload: [UInt8]
    }

    /// What happened to the incident.
    enum Action: String, Sendable {
        case fired
        case resolved
        case acknowledged
    }

    func webURL(_ incident: Incident) -> String {
        WebLink.url(base: self.webBaseURL, "incidents", incident.id)
    }

    private struct Frame: Encodable {
        var type = "incident"
        var ts: Int64
        var incidentId: String
        var rule: String
        var status: String
        var severity: String
        var summary: String
        var swarmId: String?
        var agentId: String?
        var sessionId: String?
        var skillId: String?
        var firedAt: Int64
        var resolvedAt: Int64?
        var acknowledged: Bool
        var acknowledgedBy: String?
        var webUrl: String
    }

    func items(for incident: Incident, action: Action, at: Date) throws -> [Item] {
        let frame = Frame(
            ts: at.milliseconds,
            incidentId: incident.id,
            rule: incident.rule,
            status: incident.status.rawValue,
            severity: incident.severity,
            summary: incident.summary,
            swarmId: incident.swarmID,
            agentId: incident.agentID,
            sessionId: incident.sessionID,
            skillId: incident.skillID,
            firedAt: incident.firedAt.milliseconds,
            resolvedAt: incident.resolvedAt?.milliseconds,
            acknowledged: incident.acknowledgedAt != nil,
            acknowledgedBy: incident.acknowledgedBy,
            webUrl: self.webURL(incident)
        )
        var event = BusServiceEvent()
        event.msgID = "incident-\(incident.id)-\(action.rawValue)"
        event.swarmID = incident.swarmID ?? ""
        event.agentID = incident.agentID ?? ""
        event.kind = .incident
        event.severity =
            switch (action, incident.severity) {
            case (.fired, "critical"): .error
            case (.fired, _): .warn
            default: .info
            }
        event.occurredUnixNano = at.milliseconds * 1_000_000
        event.frameTail = try BusServiceEvent.frameTail(frame)
        var items = [Item(kind: .event, payload: try event.serializedBytes())]
        if action != .acknowledged {
            let notice = IncidentNotice(
                tenant: incident.tenant,
                incidentId: incident.id,
                rule: incident.rule,
                status: incident.status.rawValue,
                severity: incident.severity,
                summary: incident.summary,
                swarmId: incident.swarmID,
                agentId: incident.agentID,
                sessionId: incident.sessionID,
                skillId: incident.skillID,
                firedAt: incident.firedAt.milliseconds,
                resolvedAt: incident.resolvedAt?.milliseconds,
                webUrl: self.webURL(incident)
            )
            items.append(Item(kind: .notice, payload: Array(try JSONEncoder().encode(notice))))
        }
        return items
    }
}

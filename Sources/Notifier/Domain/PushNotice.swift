import Contracts
import Foundation

/// An incident change or a gate opening, as the notifier pushes it: what it is about, the key
/// that makes it one push per device however often it is delivered, and what the phone needs to
/// open the right screen (nothing secret).
struct PushNotice: Sendable, Hashable {
    var tenant: String
    /// One per change: `incident-<id>-<status>` or `gate-<id>`; a device gets one job per key.
    var key: String
    var category: PushCategory
    var swarmID: String?
    /// `apns-collapse-id`: `incident-<id>` (its resolution replaces its firing push) or
    /// `gate-<id>`.
    var collapseID: String
    var title: String
    var body: String
    var isResolution: Bool
    /// When it happened (milliseconds).
    var at: Int64
    /// The fields the app reads besides `aps`: `type`, the object's id, `webUrl`…
    var fields: [String: String]

    init(incident notice: IncidentNotice) {
        let resolved = notice.status == "resolved"
        self.tenant = notice.tenant
        self.key = "incident-\(notice.incidentId)-\(resolved ? "resolved" : "firing")"
        self.category = PushCategory(rule: notice.rule)
        self.swarmID = notice.swarmId
        self.collapseID = PushPayload.collapseID("incident-", notice.incidentId)
        self.title = resolved ? "Resolved: " + self.category.title : self.category.title
        self.body = notice.summary
        self.isResolution = resolved
        self.at = resolved ? (notice.resolvedAt ?? notice.firedAt) : notice.firedAt
        var fields = ["type": "incident", "incidentId": notice.incidentId, "rule": notice.rule, "status": notice.status, "severity": notice.severity]
        fields["webUrl"] = notice.webUrl
        if let swarm = notice.swarmId { fields["swarmId"] = swarm }
        if let agent = notice.agentId { fields["agentId"] = agent }
        // A session id is what the agent's telemetry said: carried only when it is a plain id
        // that keeps the payload small (the app opens the incident without it).
        if let session = notice.sessionId, session.utf8.count <= 128,
            !session.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            fields["sessionId"] = session
        }
        if let skill = notice.skillId { fields["skillId"] = skill }
        self.fields = fields
    }

    init(gate notice: GateNotice) {
        self.tenant = notice.tenant
        self.key = "gate-\(notice.gateId)"
        self.category = .approvalGate
        self.swarmID = notice.swarmId
        self.collapseID = PushPayload.collapseID("gate-", notice.gateId)
        self.title = PushCategory.approvalGate.title
        self.body = notice.summary
        self.isResolution = false
        self.at = notice.requestedAt
        self.fields = [
            "type": "approval_gate", "gateId": notice.gateId, "swarmId": notice.swarmId, "agentId": notice.agentId, "risk": notice.risk,
            "webUrl": notice.webUrl,
        ]
        if let thread = notice.threadId { self.fields["threadId"] = thread }
    }
}

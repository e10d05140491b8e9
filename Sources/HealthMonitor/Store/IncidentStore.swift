import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// Incidents, their timeline and the outbox, in health's schema. Every change of an incident
/// is one transaction that also writes its timeline entry and its outbox items; a fingerprint
/// has at most one firing incident (a unique index), so two replicas or a restart can never
/// open a second one.
struct IncidentStore: Sendable {
    let client: PostgresClient
    let messages: IncidentMessages
    let logger: Logger

    private static let columns = """
        tenant_id, incident_id, fingerprint, rule, status, severity, summary, swarm_id, agent_id, session_id, skill_id, fired_at,
        resolved_at, acknowledged_at, acknowledged_by, acknowledge_reason
        """

    /// Opens `incident` unless its fingerprint fires already; answers the incident that fires
    /// (the new one, or the one there was).
    func fire(_ incident: Incident) async throws -> Incident {
        let items = try self.messages.items(for: incident, action: .fired, at: incident.firedAt)
        return try await self.client.transaction(logger: self.logger) { connection in
            let inserted = try await connection.query(
                """
                INSERT INTO incidents (tenant_id, incident_id, fingerprint, rule, status, severity, summary, swarm_id, agent_id, session_id,
                    skill_id, fired_at)
                VALUES (\(incident.tenant), \(incident.id), \(incident.fingerprint), \(incident.rule), 'firing', \(incident.severity),
                    \(incident.summary), \(incident.swarmID), \(incident.agentID), \(incident.sessionID), \(incident.skillID), \(incident.firedAt))
                ON CONFLICT (tenant_id, fingerprint) WHERE status = 'firing' DO NOTHING
                RETURNING incident_id
                """,
                logger: self.logger
            )
            var created = false
            for try await _ in inserted { created = true }
            guard created else {
                let rows = try await connection.query(
                    "SELECT \(unescaped: Self.columns) FROM incidents WHERE tenant_id = \(incident.tenant) AND fingerprint = \(incident.fingerprint) AND status = 'firing'",
                    logger: self.logger
                )
                for try await row in rows { return try Incident(row: row) }
                throw APIError(.conflict, "incident \(incident.fingerprint) changed meanwhile")
            }
            try await self.record(incident, action: .fired, actor: "system", detail: incident.summary, items: items, on: connection)
            return incident
        }
    }

    /// Resolves a firing incident; nil when it was not firing.
    @discardableResult
    func resolve(tenant: String, id: String, at: Date) async throws -> Incident? {
        try await self.client.transaction(logger: self.logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE incidents SET status = 'resolved', resolved_at = \(at)
                WHERE tenant_id = \(tenant) AND incident_id = \(id) AND status = 'firing'
                RETURNING \(unescaped: Self.columns)
                """,
                logger: self.logger
            )
            var incident: Incident?
            for try await row in rows { incident = try Incident(row: row) }
            guard let incident else { return nil }
            let items = try self.messages.items(for: incident, action: .resolved, at: at)
            try await self.record(incident, action: .resolved, actor: "system", detail: nil, items: items, on: connection)
            return incident
        }
    }

    /// Acknowledges an incident once (again: the first acknowledgement stands); nil when the
    /// tenant has no such incident.
    func acknowledge(tenant: String, id: String, actor: String, reason: String) async throws -> Incident? {
        try await self.client.transaction(logger: self.logger) { connection in
            let now = Date.nowMilliseconds
            let rows = try await connection.query(
                """
                UPDATE incidents SET acknowledged_at = \(now), acknowledged_by = \(actor), acknowledge_reason = \(reason)
                WHERE tenant_id = \(tenant) AND incident_id = \(id) AND acknowledged_at IS NULL
                RETURNING \(unescaped: Self.columns)
                """,
                logger: self.logger
            )
            var updated: Incident?
            for try await row in rows { updated = try Incident(row: row) }
            guard let incident = updated else {
                let existing = try await connection.query(
                    "SELECT \(unescaped: Self.columns) FROM incidents WHERE tenant_id = \(tenant) AND incident_id = \(id)",
                    logger: self.logger
                )
                for try await row in existing { return try Incident(row: row) }
                return nil
            }
            let items = try self.messages.items(for: incident, action: .acknowledged, at: now)
            try await self.record(incident, action: .acknowledged, actor: actor, detail: reason, items: items, on: connection)
            return incident
        }
    }

    private func record(
        _ incident: Incident,
        action: IncidentMessages.Action,
        actor: String,
        detail: String?,
        items: [IncidentMessages.Item],
        on connection: PostgresConnection
    ) async throws {
        try await connection.query(
            """
            INSERT INTO incident_timeline (tenant_id, incident_id, action, actor, detail)
            VALUES (\(incident.tenant), \(incident.id), \(action.rawValue), \(actor), \(detail))
            """,
            logger: self.logger
        )
        try await connection.query(
            """
            INSERT INTO outbox (tenant_id, kind, payload)
            SELECT \(incident.tenant), k, p FROM unnest(\(items.map(\.kind.rawValue)), \(items.map { ByteBuffer(bytes: $0.payload) })) AS u (k, p)
            """,
            logger: self.logger
        )
    }

    // MARK: Reading

    func incident(tenant: String, id: String) async throws -> Incident? {
        let rows = try await self.client.query(
            "SELECT \(unescaped: Self.columns) FROM incidents WHERE tenant_id = \(tenant) AND incident_id = \(id)",
            logger: self.logger
        )
        for try await row in rows { return try Incident(row: row) }
        return nil
    }

    /// A page of the tenant's incidents, newest first, fired before the cursor's.
    func list(
        tenant: String,
        statuses: [Incident.Status],
        swarm: String?,
        skill: String?,
        limit: Int,
        before cursor: (firedAt: Date, id: String)?
    ) async throws -> [Incident] {
        let rows = try await self.client.query(
            """
            SELECT \(unescaped: Self.columns) FROM incidents
            WHERE tenant_id = \(tenant) AND status = ANY(\(statuses.map(\.rawValue)))
              AND (\(swarm)::text IS NULL OR swarm_id = \(swarm))
              AND (\(skill)::text IS NULL OR skill_id = \(skill))
              AND (\(cursor?.firedAt)::timestamptz IS NULL OR (fired_at, incident_id) < (\(cursor?.firedAt), \(cursor?.id ?? "")))
            ORDER BY fired_at DESC, incident_id DESC
            LIMIT \(limit)
            """,
            logger: self.logger
        )
        var incidents: [Incident] = []
        for try await row in rows { incidents.append(try Incident(row: row)) }
        return incidents
    }

    /// Every firing incident of the tenants this replica follows (to take them back at start).
    func firing(owned: (String) -> Bool) async throws -> [Incident] {
        let rows = try await self.client.query("SELECT \(unescaped: Self.columns) FROM incidents WHERE status = 'firing'", logger: self.logger)
        var incidents: [Incident] = []
        for try await row in rows {
            let incident = try Incident(row: row)
            if owned(incident.tenant) { incidents.append(incident) }
        }
        return incidents
    }

    struct TimelineEntry: Sendable {
        var at: Date
        var action: String
        var actor: String
        var detail: String?
    }

    func timeline(tenant: String, id: String) async throws -> [TimelineEntry] {
        let rows = try await self.client.query(
            "SELECT at, action, actor, detail FROM incident_timeline WHERE tenant_id = \(tenant) AND incident_id = \(id) ORDER BY id LIMIT 1000",
            logger: self.logger
        )
        var entries: [TimelineEntry] = []
        for try await (at, action, actor, detail) in rows.decode((Date, String, String, String?).self) {
            entries.append(TimelineEntry(at: at, action: action, actor: actor, detail: detail))
        }
        return entries
    }
}

extension Incident {
    init(row: PostgresRow) throws {
        let cells = row.makeRandomAccess()
        self.init(
            tenant: try cells["tenant_id"].decode(String.self),
            id: try cells["incident_id"].decode(String.self),
            fingerprint: try cells["fingerprint"].decode(String.self),
            rule: try cells["rule"].decode(String.self),
            status: Incident.Status(rawValue: try cells["status"].decode(String.self)) ?? .resolved,
            severity: try cells["severity"].decode(String.self),
            summary: try cells["summary"].decode(String.self),
            swarmID: try cells["swarm_id"].decode(String?.self),
            agentID: try cells["agent_id"].decode(String?.self),
            sessionID: try cells["session_id"].decode(String?.self),
            skillID: try cells["skill_id"].decode(String?.self),
            firedAt: try cells["fired_at"].decode(Date.self),
            resolvedAt: try cells["resolved_at"].decode(Date?.self),
            acknowledgedAt: try cells["acknowledged_at"].decode(Date?.self),
            acknowledgedBy: try cells["acknowledged_by"].decode(String?.self),
            acknowledgeReason: try cells["acknowledge_reason"].decode(String?.self)
        )
    }
}

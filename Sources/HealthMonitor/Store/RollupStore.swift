import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// The rollups the API serves (health's `rollups` table): written by the replica that follows
/// a tenant, read by any replica.
struct RollupStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    /// Rollups untouched this long are deleted.
    static let retention: TimeInterval = 7 * 86_400

    func save(_ rollups: [HealthRollup]) async throws {
        guard !rollups.isEmpty else { return }
        for chunk in stride(from: 0, to: rollups.count, by: 500).map({ Array(rollups[$0..<min($0 + 500, rollups.count)]) }) {
            try await self.client.write(
                """
                INSERT INTO rollups (tenant_id, kind, key, swarm_id, agent_id, doc, updated_at)
                SELECT t, k, y, s, a, d::jsonb, now()
                FROM unnest(\(chunk.map(\.tenant)), \(chunk.map(\.kind.rawValue)), \(chunk.map(\.key)), \(chunk.map(\.swarmID)),
                    \(chunk.map(\.agentID)), \(chunk.map { String(decoding: $0.doc, as: UTF8.self) })) AS u (t, k, y, s, a, d)
                ON CONFLICT (tenant_id, kind, key) DO UPDATE SET doc = EXCLUDED.doc, swarm_id = EXCLUDED.swarm_id,
                    agent_id = EXCLUDED.agent_id, updated_at = EXCLUDED.updated_at
                """,
                logger: self.logger
            )
        }
    }

    /// The tenant's rollups of `kind`, most recently updated first.
    func list(tenant: String, kind: HealthRollup.Kind, swarm: String? = nil, agent: String? = nil, limit: Int) async throws -> [Data] {
        let rows = try await self.client.query(
            """
            SELECT doc::text FROM rollups
            WHERE tenant_id = \(tenant) AND kind = \(kind.rawValue)
              AND (\(swarm)::text IS NULL OR swarm_id = \(swarm)) AND (\(agent)::text IS NULL OR agent_id = \(agent))
            ORDER BY updated_at DESC LIMIT \(limit)
            """,
            logger: self.logger
        )
        var docs: [Data] = []
        for try await doc in rows.decode(String.self) { docs.append(Data(doc.utf8)) }
        return docs
    }

    func rollup(tenant: String, kind: HealthRollup.Kind, key: String) async throws -> Data? {
        let rows = try await self.client.query(
            "SELECT doc::text FROM rollups WHERE tenant_id = \(tenant) AND kind = \(kind.rawValue) AND key = \(key)",
            logger: self.logger
        )
        for try await doc in rows.decode(String.self) { return Data(doc.utf8) }
        return nil
    }

    /// Deletes what has not been touched within the retention.
    func prune() async throws {
        try await self.client.write(
            "DELETE FROM rollups WHERE updated_at < now() - make_interval(secs => \(Self.retention))",
            logger: self.logger
        )
    }
}

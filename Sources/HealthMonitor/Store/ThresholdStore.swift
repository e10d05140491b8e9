import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// Tenants' thresholds and their audit, in health's schema. A change is one transaction that
/// bumps the version and writes the audit entry.
struct ThresholdStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    /// The overrides (swarm and skill) one tenant may keep.
    static let maxOverrides = 500

    enum Scope: String, Sendable {
        case tenant
        case swarm
        case skill
    }

    struct Entry: Sendable {
        var scope: Scope
        var target: String
        var values: ThresholdValues
        var version: Int
        var updatedBy: String
        var updatedAt: Date
    }

    /// The tenant's stored entries.
    func entries(tenant: String) async throws -> [Entry] {
        let rows = try await self.client.query(
            "SELECT scope, target, vals::text, version, updated_by, updated_at FROM thresholds WHERE tenant_id = \(tenant) ORDER BY scope, target",
            logger: self.logger
        )
        return try await Self.entries(rows)
    }

    /// Every tenant's thresholds (loaded at start).
    func all() async throws -> [String: ThresholdSet] {
        let rows = try await self.client.query(
            "SELECT tenant_id, scope, target, vals::text FROM thresholds",
            logger: self.logger
        )
        var sets: [String: ThresholdSet] = [:]
        for try await (tenant, scope, target, text) in rows.decode((String, String, String, String).self) {
            guard let values = try? JSONDecoder().decode(ThresholdValues.self, from: Data(text.utf8)) else { continue }
            sets[tenant, default: ThresholdSet()].set(Scope(rawValue: scope), target: target, values: values)
        }
        return sets
    }

    /// The tenant's thresholds as a set.
    func set(tenant: String) async throws -> ThresholdSet {
        var set = ThresholdSet()
        for entry in try await self.entries(tenant: tenant) { set.set(entry.scope, target: entry.target, values: entry.values) }
        return set
    }

    /// Stores `values` for the scope (an empty override is removed); answers the entry.
    /// - Throws: 409 `Conflict` when `expectedVersion` is not the stored one; 400 past
    ///   ``maxOverrides``.
    func put(
        tenant: String,
        scope: Scope,
        target: String,
        values: ThresholdValues,
        expectedVersion: Int?,
        actor: String,
        reason: String?
    )
        async throws -> Entry
    {
        let text = String(decoding: try JSONEncoder().encode(values), as: UTF8.self)
        return try await self.client.transaction(logger: self.logger) { connection in
            try await connection.perform("SELECT pg_advisory_xact_lock(hashtext('thresholds'), hashtext(\(tenant)))", logger: self.logger)
            var current = 0
            let rows = try await connection.query(
                "SELECT version FROM thresholds WHERE tenant_id = \(tenant) AND scope = \(scope.rawValue) AND target = \(target)",
                logger: self.logger
            )
            for try await version in rows.decode(Int.self) { current = version }
            if let expectedVersion, expectedVersion != current {
                throw APIError(.conflict, "these thresholds are at version \(current), not \(expectedVersion)")
            }
            if current == 0, scope != .tenant {
                let count = try await connection.query(
                    "SELECT count(*) FROM thresholds WHERE tenant_id = \(tenant) AND scope <> 'tenant'",
                    logger: self.logger
                )
                for try await overrides in count.decode(Int.self) where overrides >= Self.maxOverrides {
                    throw APIError(.invalidRequest, "a tenant keeps at most \(Self.maxOverrides) swarm and skill overrides")
                }
            }
            let version = current + 1
            let now = Date.nowMilliseconds
            if values.isEmpty && scope != .tenant {
                try await connection.query(
                    "DELETE FROM thresholds WHERE tenant_id = \(tenant) AND scope = \(scope.rawValue) AND target = \(target)",
                    logger: self.logger
                )
            } else {
                try await connection.query(
                    """
                    INSERT INTO thresholds (tenant_id, scope, target, vals, version, updated_by, updated_at)
                    VALUES (\(tenant), \(scope.rawValue), \(target), \(text)::jsonb, \(version), \(actor), \(now))
                    ON CONFLICT (tenant_id, scope, target) DO UPDATE SET vals = EXCLUDED.vals, version = EXCLUDED.version,
                        updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at
                    """,
                    logger: self.logger
                )
            }
            try await connection.query(
                """
                INSERT INTO threshold_audit (tenant_id, scope, target, version, vals, actor, reason)
                VALUES (\(tenant), \(scope.rawValue), \(target), \(version), \(text)::jsonb, \(actor), \(reason))
                """,
                logger: self.logger
            )
            return Entry(
                scope: scope,
                target: target,
                values: values,
                version: values.isEmpty && scope != .tenant ? 0 : version,
                updatedBy: actor,
                updatedAt: now
            )
        }
    }

    private static func entries(_ rows: PostgresRowSequence) async throws -> [Entry] {
        var entries: [Entry] = []
        for try await (scope, target, text, version, by, at) in rows.decode((String, String, String, Int, String, Date).self) {
            guard let scope = Scope(rawValue: scope), let values = try? JSONDecoder().decode(ThresholdValues.self, from: Data(text.utf8)) else {
                continue
            }
            entries.append(Entry(scope: scope, target: target, values: values, version: version, updatedBy: by, updatedAt: at))
        }
        return entries
    }
}

extension ThresholdSet {
    mutating func set(_ scope: ThresholdStore.Scope?, target: String, values: ThresholdValues) {
        switch scope {
        case .tenant?: self.tenant = values
        case .swarm?: self.swarms[target] = values
        case .skill?: self.skills[target] = values
        case nil: break
        }
    }
}

import Foundation
import PostgresNIO
import ServiceKit

extension PipelineStore {
    /// A pipeline a replica holds: who it is, and the lease it renews.
    struct Claim: Sendable, Hashable {
        var tenant: String
        var id: String
    }

    /// Takes up to `limit` runnable pipelines (not paused, their lease free or expired: running,
    /// or awaiting a decision on a stage whose gate was never opened) for `owner`, oldest change
    /// first; replicas skip each other's rows.
    func claim(owner: String, limit: Int, leaseSeconds: Int) async throws -> [Claim] {
        var claims: [Claim] = []
        for row in try await self.client.write(
            """
            UPDATE pipelines SET lease_owner = \(owner), lease_until = now() + make_interval(secs => \(Double(leaseSeconds)))
            WHERE (tenant_id, pipeline_id) IN (
                SELECT tenant_id, pipeline_id FROM pipelines
                WHERE NOT paused AND (lease_until IS NULL OR lease_until < now())
                  AND (status = 'running' OR (status = 'awaitingApproval' AND EXISTS (
                      SELECT 1 FROM stages s WHERE s.tenant_id = pipelines.tenant_id AND s.pipeline_id = pipelines.pipeline_id
                        AND s.status = 'completed' AND s.gate_id IS NULL)))
                ORDER BY updated_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            RETURNING tenant_id, pipeline_id
            """,
            logger: self.logger
        ) {
            let (tenant, id) = try row.decode((String, String).self)
            claims.append(Claim(tenant: tenant, id: id))
        }
        return claims
    }

    /// Extends the leases `owner` still holds on `claims` while their pipelines are unfinished;
    /// returns those (a lease lost, or a pipeline a terminate ended, is gone from it).
    func renew(owner: String, _ claims: [Claim], leaseSeconds: Int) async throws -> Set<Claim> {
        var held: Set<Claim> = []
        for row in try await self.client.write(
            """
            UPDATE pipelines SET lease_until = now() + make_interval(secs => \(Double(leaseSeconds)))
            WHERE lease_owner = \(owner) AND lease_until >= now() AND status IN ('running', 'awaitingApproval')
              AND (tenant_id, pipeline_id) IN (SELECT unnest(\(claims.map(\.tenant))::text[]), unnest(\(claims.map(\.id))::text[]))
            RETURNING tenant_id, pipeline_id
            """,
            logger: self.logger
        ) {
            let (tenant, id) = try row.decode((String, String).self)
            held.insert(Claim(tenant: tenant, id: id))
        }
        return held
    }

    /// Gives the pipeline's lease back (the runner stopped running it).
    func release(owner: String, _ claim: Claim) async throws {
        try await self.client.write(
            """
            UPDATE pipelines SET lease_owner = NULL, lease_until = NULL
            WHERE tenant_id = \(claim.tenant) AND pipeline_id = \(claim.id) AND lease_owner = \(owner)
            """,
            logger: self.logger
        )
    }

    /// Starts an attempt of the stage at `position` if `owner` holds the pipeline and it is
    /// running and not paused; returns the attempt's number (nil: the lease or the state is gone).
    func startStage(owner: String, _ claim: Claim, position: Int, model: String) async throws -> Int? {
        for row in try await self.client.write(
            """
            UPDATE stages s SET status = 'running', attempt = s.attempt + 1, started_at = now(), finished_at = NULL, model = \(model),
                fetches = '[]'
            FROM pipelines p
            WHERE s.tenant_id = \(claim.tenant) AND s.pipeline_id = \(claim.id) AND s.position = \(position)
              AND s.status IN ('waiting', 'running')
              AND p.tenant_id = s.tenant_id AND p.pipeline_id = s.pipeline_id AND p.lease_owner = \(owner) AND p.status = 'running'
              AND NOT p.paused
            RETURNING s.attempt
            """,
            logger: self.logger
        ) {
            return try row.decode(Int.self)
        }
        return nil
    }

    /// Records what became of the stage's research URLs.
    func recordFetches(_ claim: Claim, position: Int, attempt: Int, _ fetches: [FetchRecord]) async throws {
        let json = String(decoding: try JSONEncoder().encode(fetches), as: UTF8.self)
        try await self.client.write(
            """
            UPDATE stages SET fetches = \(json)
            WHERE tenant_id = \(claim.tenant) AND pipeline_id = \(claim.id) AND position = \(position) AND attempt = \(attempt)
            """,
            logger: self.logger
        )
    }

    /// What finishing a stage made of its pipeline.
    struct Finished: Sendable, Equatable {
        /// The stage's artifact (new, or the one this attempt stored before).
        var artifactID: String
        /// The pipeline's status after it.
        var status: PipelineStatus
    }

    /// Stores the attempt's artifact (keyed by pipeline, stage and attempt: a repeat stores
    /// nothing more) and its usage, and marks the stage completed, or approved for an unattended
    /// pipeline, in one transaction, if `owner` still holds the pipeline and the attempt is the
    /// stage's current one. Nil when not (the lease was lost, or a terminate stopped it).
    func finishStage(
        owner: String,
        _ claim: Claim,
        position: Int,
        attempt: Int,
        usage: UsageRecord,
        providerMilliseconds: Int64,
        output: String,
        artifact: (id: String, role: PipelineRole, title: String, createdAt: Date, exportedPath: String?),
        unattended: Bool,
        lastStage: Bool
    ) async throws -> Finished? {
        try await self.client.transaction(logger: self.logger) { connection in
            var held = false
            for try await status in try await connection.query(
                """
                SELECT p.status FROM pipelines p JOIN stages s USING (tenant_id, pipeline_id)
                WHERE p.tenant_id = \(claim.tenant) AND p.pipeline_id = \(claim.id) AND p.lease_owner = \(owner)
                  AND s.position = \(position) AND s.attempt = \(attempt) AND s.status = 'running'
                FOR UPDATE OF p, s
                """,
                logger: self.logger
            ).decode(String.self) where status == PipelineStatus.running.rawValue {
                held = true
            }
            guard held else { return nil }
            var stored: String?
            for try await row in try await connection.query(
                """
                INSERT INTO artifacts (tenant_id, pipeline_id, position, attempt, artifact_id, role, title, content, created_at, exported_path)
                VALUES (\(claim.tenant), \(claim.id), \(position), \(attempt), \(artifact.id), \(artifact.role.rawValue), \(artifact.title),
                    \(output), \(artifact.createdAt), \(artifact.exportedPath))
                ON CONFLICT (tenant_id, pipeline_id, position, attempt) DO UPDATE SET artifact_id = artifacts.artifact_id
                RETURNING artifact_id
                """,
                logger: self.logger
            ).decode(String.self) {
                stored = row
            }
            guard let artifactID = stored else { return nil }
            let stageStatus: StageStatus = unattended ? .approved : .completed
            try await connection.query(
                """
                UPDATE stages SET status = \(stageStatus.rawValue), finished_at = now(), model = \(usage.model), input_tokens = \(usage.input),
                    output_tokens = \(usage.output), cache_creation_tokens = \(usage.cacheCreation), cache_read_tokens = \(usage.cacheRead),
                    cost_usd = \(usage.costUSD), output = \(output), artifact_id = \(artifactID), provider_ms = \(providerMilliseconds),
                    decided_by = \(unattended ? "unattended" : nil)
                WHERE tenant_id = \(claim.tenant) AND pipeline_id = \(claim.id) AND position = \(position)
                """,
                logger: self.logger
            )
            let status: PipelineStatus = unattended ? (lastStage ? .completed : .running) : .awaitingApproval
            try await connection.query(
                """
                UPDATE pipelines SET status = \(status.rawValue), updated_at = now(),
                    finished_at = CASE WHEN \(status == .completed) THEN now() ELSE finished_at END
                WHERE tenant_id = \(claim.tenant) AND pipeline_id = \(claim.id)
                """,
                logger: self.logger
            )
            return Finished(artifactID: artifactID, status: status)
        }
    }

    /// Records the gate a finished stage opened.
    func recordGate(_ claim: Claim, position: Int, gateID: String) async throws {
        try await self.client.write(
            "UPDATE stages SET gate_id = \(gateID) WHERE tenant_id = \(claim.tenant) AND pipeline_id = \(claim.id) AND position = \(position)",
            logger: self.logger
        )
    }

    /// Marks a pipeline completed once every stage is approved (an unattended pipeline's last
    /// stage does this itself; this is for a runner that resumes one whose last decision came
    /// while nobody ran it).
    func complete(owner: String, _ claim: Claim) async throws -> Bool {
        let rows = try await self.client.write(
            """
            UPDATE pipelines SET status = 'completed', updated_at = now(), finished_at = now()
            WHERE tenant_id = \(claim.tenant) AND pipeline_id = \(claim.id) AND lease_owner = \(owner) AND status = 'running'
              AND NOT EXISTS (SELECT 1 FROM stages WHERE tenant_id = \(claim.tenant) AND pipeline_id = \(claim.id) AND status <> 'approved')
            RETURNING 1
            """,
            logger: self.logger
        )
        return !rows.isEmpty
    }

    /// Ends a pipeline `owner` holds with an error (seed 001's table); with a position and an
    /// attempt, only while that attempt is the stage's current one, which then failed.
    func fail(owner: String, _ claim: Claim, position: Int?, attempt: Int?, code: String, message: String) async throws -> Bool {
        try await self.client.transaction(logger: self.logger) { connection in
            var changed = false
            for try await _ in try await connection.query(
                """
                UPDATE pipelines SET status = 'failed', error_code = \(code), error_message = \(message), updated_at = now(), finished_at = now()
                WHERE tenant_id = \(claim.tenant) AND pipeline_id = \(claim.id) AND status IN ('running', 'awaitingApproval')
                  AND lease_owner = \(owner)
                  AND (\(attempt == nil) OR EXISTS (SELECT 1 FROM stages WHERE tenant_id = \(claim.tenant) AND pipeline_id = \(claim.id)
                      AND position = \(position ?? 0) AND attempt = \(attempt ?? 0)))
                RETURNING 1
                """,
                logger: self.logger
            ).decode(Int.self) {
                changed = true
            }
            if changed, let position {
                try await connection.query(
                    """
                    UPDATE stages SET status = 'failed', finished_at = now(), reason = \(message)
                    WHERE tenant_id = \(claim.tenant) AND pipeline_id = \(claim.id) AND position = \(position) AND status = 'running'
                    """,
                    logger: self.logger
                )
            }
            return changed
        }
    }
}

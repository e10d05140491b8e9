import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// pipeline-runner's schema (`pipeline`): pipelines, their stages and artifacts, the leases of
/// the replicas running them and the control commands applied. Every change a runner makes to
/// a pipeline it runs is guarded by its lease, so a replica that lost it (it stalled, another
/// took over) changes nothing.
struct PipelineStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    /// A new pipeline, or the one an earlier request with its idempotency key made.
    enum Created: Sendable {
        case created(PipelineRecord)
        case existing(PipelineRecord)
    }

    /// Stores a planned pipeline with its stages, unless `idempotencyKey` made one already;
    /// refuses past `maxActive` unfinished pipelines of the tenant.
    func create(_ pipeline: PipelineRecord, idempotencyKey: String?, maxActive: Int) async throws -> Created {
        let roles = String(decoding: try JSONEncoder().encode(pipeline.roles), as: UTF8.self)
        let existing: String? = try await self.client.transaction(logger: self.logger) { connection in
            try await connection.perform("SELECT pg_advisory_xact_lock(hashtext('pipelines'), hashtext(\(pipeline.tenant)))", logger: self.logger)
            if let idempotencyKey {
                for try await (id) in try await connection.query(
                    "SELECT pipeline_id FROM pipelines WHERE tenant_id = \(pipeline.tenant) AND idempotency_key = \(idempotencyKey)",
                    logger: self.logger
                ).decode(String.self) {
                    return id
                }
            }
            for try await count in try await connection.query(
                "SELECT count(*) FROM pipelines WHERE tenant_id = \(pipeline.tenant) AND status IN ('running', 'awaitingApproval')",
                logger: self.logger
            ).decode(Int.self) where count >= maxActive {
                throw APIError(
                    .rateLimited,
                    "this tenant has \(maxActive) unfinished pipelines (pipeline.max-active-per-tenant)",
                    retryAfterSeconds: 30
                )
            }
            let planner = pipeline.planner
            try await connection.query(
                """
                INSERT INTO pipelines (tenant_id, pipeline_id, idempotency_key, title, goal, unattended, export, roles, status,
                    planner_model, planner_input_tokens, planner_output_tokens, planner_cache_creation_tokens, planner_cache_read_tokens,
                    planner_cost_usd, created_by, created_at, updated_at)
                VALUES (\(pipeline.tenant), \(pipeline.id), \(idempotencyKey), \(pipeline.title), \(pipeline.goal), \(pipeline.unattended),
                    \(pipeline.export), \(roles), \(pipeline.status.rawValue), \(planner.model), \(planner.input), \(planner.output),
                    \(planner.cacheCreation), \(planner.cacheRead), \(planner.costUSD), \(pipeline.createdBy), \(pipeline.createdAt),
                    \(pipeline.createdAt))
                """,
                logger: self.logger
            )
            for stage in pipeline.stages {
                let urls = String(decoding: try JSONEncoder().encode(stage.researchURLs), as: UTF8.self)
                try await connection.query(
                    """
                    INSERT INTO stages (tenant_id, pipeline_id, position, role, task, research_urls, status)
                    VALUES (\(pipeline.tenant), \(pipeline.id), \(stage.position), \(stage.role.rawValue), \(stage.task), \(urls), 'waiting')
                    """,
                    logger: self.logger
                )
            }
            return nil
        }
        if let existing, let stored = try await self.pipeline(tenant: pipeline.tenant, id: existing) { return .existing(stored) }
        return .created(pipeline)
    }

    // MARK: Reading

    static let pipelineColumns = """
        pipeline_id, title, goal, unattended, export, roles, status, paused, planner_model, planner_input_tokens,
        planner_output_tokens, planner_cache_creation_tokens, planner_cache_read_tokens, planner_cost_usd, error_code, error_message,
        created_by, created_at, updated_at, finished_at
        """

    /// The pipeline with its stages; nil when the tenant has none of that id.
    func pipeline(tenant: String, id: String) async throws -> PipelineRecord? {
        try await self.client.withConnection { connection in
            var found: PipelineRecord?
            for try await row in try await connection.query(
                "SELECT \(unescaped: Self.pipelineColumns) FROM pipelines WHERE tenant_id = \(tenant) AND pipeline_id = \(id)",
                logger: self.logger
            ) {
                found = try Self.pipeline(row, tenant: tenant)
            }
            guard var pipeline = found else { return nil }
            pipeline.stages = try await self.stages(tenant: tenant, id: id, on: connection)
            return pipeline
        }
    }

    private func stages(tenant: String, id: String, on connection: PostgresConnection) async throws -> [StageRecord] {
        var stages: [StageRecord] = []
        for try await row in try await connection.query(
            """
            SELECT position, role, task, research_urls, status, attempt, model, input_tokens, output_tokens, cache_creation_tokens,
                cache_read_tokens, cost_usd, started_at, finished_at, gate_id, decided_by, reason, artifact_id, output, fetches, provider_ms
            FROM stages WHERE tenant_id = \(tenant) AND pipeline_id = \(id) ORDER BY position
            """,
            logger: self.logger
        ) {
            let (
                position, role, task, urls, status, attempt, model, input, output, cacheCreation, cacheRead, cost, startedAt, finishedAt, gateID,
                decidedBy, reason, artifactID, text, fetches, providerMilliseconds
            ) =
                try row.decode(
                    (
                        Int, String, String, String, String, Int, String?, Int64?, Int64?, Int64?, Int64?, Double?, Date?, Date?, String?, String?,
                        String?, String?, String?, String, Int64?
                    ).self
                )
            var usage: UsageRecord?
            if let model, let input, let output, let cost {
                usage = UsageRecord(
                    model: model,
                    input: input,
                    output: output,
                    cacheCreation: cacheCreation ?? 0,
                    cacheRead: cacheRead ?? 0,
                    costUSD: cost
                )
            }
            stages.append(
                StageRecord(
                    position: position,
                    role: PipelineRole(rawValue: role) ?? .producer,
                    task: task,
                    researchURLs: (try? JSONDecoder().decode([String].self, from: Data(urls.utf8))) ?? [],
                    status: StageStatus(rawValue: status) ?? .failed,
                    attempt: attempt,
                    usage: usage,
                    providerMilliseconds: providerMilliseconds,
                    startedAt: startedAt,
                    finishedAt: finishedAt,
                    gateID: gateID,
                    decidedBy: decidedBy,
                    reason: reason,
                    artifactID: artifactID,
                    output: text,
                    fetches: (try? JSONDecoder().decode([FetchRecord].self, from: Data(fetches.utf8))) ?? []
                )
            )
        }
        return stages
    }

    private static func pipeline(_ row: PostgresRow, tenant: String) throws -> PipelineRecord {
        let (
            id, title, goal, unattended, export, roles, status, paused, model, input, output, cacheCreation, cacheRead, cost, errorCode, errorMessage,
            createdBy, createdAt, updatedAt, finishedAt
        ) =
            try row.decode(
                (
                    String, String, String, Bool, Bool, String, String, Bool, String, Int64, Int64, Int64, Int64, Double, String?, String?, String,
                    Date, Date, Date?
                ).self
            )
        return PipelineRecord(
            tenant: tenant,
            id: id,
            title: title,
            goal: goal,
            unattended: unattended,
            export: export,
            roles: (try? JSONDecoder().decode([String: RoleSettings].self, from: Data(roles.utf8))) ?? [:],
            status: PipelineStatus(rawValue: status) ?? .failed,
            paused: paused,
            planner: UsageRecord(model: model, input: input, output: output, cacheCreation: cacheCreation, cacheRead: cacheRead, costUSD: cost),
            errorCode: errorCode,
            errorMessage: errorMessage,
            createdBy: createdBy,
            createdAt: createdAt,
            updatedAt: updatedAt,
            finishedAt: finishedAt,
            stages: []
        )
    }

    /// A page of the tenant's pipelines, newest first, before `before` (created at, id).
    func list(tenant: String, limit: Int, before: (Date, String)?) async throws -> [(PipelineRecord, stageCount: Int, cost: Double)] {
        let beforeAt = before?.0 ?? Date.distantFuture
        let beforeID = before?.1 ?? ""
        var page: [(PipelineRecord, Int, Double)] = []
        for try await row in try await self.client.query(
            """
            SELECT \(unescaped: Self.pipelineColumns),
                (SELECT count(*) FROM stages s WHERE s.tenant_id = p.tenant_id AND s.pipeline_id = p.pipeline_id),
                p.planner_cost_usd + COALESCE((SELECT sum(cost_usd) FROM stages s WHERE s.tenant_id = p.tenant_id AND s.pipeline_id = p.pipeline_id), 0)
            FROM pipelines p WHERE tenant_id = \(tenant)
              AND (\(before == nil) OR (created_at, pipeline_id) < (\(beforeAt), \(beforeID)))
            ORDER BY created_at DESC, pipeline_id DESC LIMIT \(limit)
            """,
            logger: self.logger
        ) {
            let columns = try row.decode(
                (
                    String, String, String, Bool, Bool, String, String, Bool, String, Int64, Int64, Int64, Int64, Double, String?, String?, String,
                    Date, Date, Date?, Int, Double
                ).self
            )
            page.append((try Self.pipeline(row, tenant: tenant), columns.20, columns.21))
        }
        return page
    }

    struct ArtifactRow: Sendable {
        var id: String
        var position: Int
        var attempt: Int
        var role: String
        var title: String
        var bytes: Int
        var createdAt: Date
        var exportedPath: String?
    }

    func artifacts(tenant: String, pipeline: String) async throws -> [ArtifactRow] {
        var rows: [ArtifactRow] = []
        for try await (id, position, attempt, role, title, bytes, createdAt, exported) in try await self.client.query(
            """
            SELECT artifact_id, position, attempt, role, title, octet_length(content), created_at, exported_path FROM artifacts
            WHERE tenant_id = \(tenant) AND pipeline_id = \(pipeline) ORDER BY position, attempt
            """,
            logger: self.logger
        ).decode((String, Int, Int, String, String, Int, Date, String?).self) {
            rows.append(
                ArtifactRow(
                    id: id,
                    position: position,
                    attempt: attempt,
                    role: role,
                    title: title,
                    bytes: bytes,
                    createdAt: createdAt,
                    exportedPath: exported
                )
            )
        }
        return rows
    }

    /// An artifact's Markdown; nil when the tenant's pipeline has none of that id.
    func artifactContent(tenant: String, pipeline: String, artifact: String) async throws -> String? {
        for try await content in try await self.client.query(
            "SELECT content FROM artifacts WHERE tenant_id = \(tenant) AND pipeline_id = \(pipeline) AND artifact_id = \(artifact)",
            logger: self.logger
        ).decode(String.self) {
            return content
        }
        return nil
    }
}

extension PipelineStore {
    /// The pipeline an earlier request with `idempotencyKey` made.
    func pipeline(tenant: String, idempotencyKey: String) async throws -> PipelineRecord? {
        for try await id in try await self.client.query(
            "SELECT pipeline_id FROM pipelines WHERE tenant_id = \(tenant) AND idempotency_key = \(idempotencyKey)",
            logger: self.logger
        ).decode(String.self) {
            return try await self.pipeline(tenant: tenant, id: id)
        }
        return nil
    }

    /// The tenant's unfinished pipelines.
    func activeCount(tenant: String) async throws -> Int {
        for try await count in try await self.client.query(
            "SELECT count(*) FROM pipelines WHERE tenant_id = \(tenant) AND status IN ('running', 'awaitingApproval')",
            logger: self.logger
        ).decode(Int.self) {
            return count
        }
        return 0
    }
}

import Anthropic
import Contracts
import Foundation
import OpenAPIRuntime
import PipelineRunnerContract
import ServiceKit

/// pipeline-runner's HTTP operations (the `APIProtocol` generated from
/// openapi/pipeline-runner.yaml): create (plan) a pipeline, read pipelines and their artifacts.
struct PipelineHandler: Sendable {
    let store: PipelineStore
    let provider: AnthropicClient
    let events: PipelineEvents
    let settings: PipelineSettings
    /// Pipelines created per tenant per minute: this replica's own buckets, asked first (a flood
    /// is refused without a query), then the tenant's bucket every replica shares.
    let creates: KeyedTokenBuckets
    let sharedCreates: PostgresTokenBuckets
    /// Planner calls in flight per tenant.
    let planning: PlannerCalls
    /// Called once a pipeline is stored: the scheduler looks for work at once.
    let started: @Sendable () -> Void

    static let noPipeline = APIError(.notFound, "no such pipeline")

    /// The table of ``sharedCreates`` (pipeline-runner's schema).
    static let creationBucketsTable = "creation_buckets"
}

extension PipelineHandler: APIProtocol {
    func createPipeline(_ input: Operations.CreatePipeline.Input) async throws -> Operations.CreatePipeline.Output {
        let person = try Caller.person()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        let request = try PipelineRequest(body, settings: self.settings)
        if let key = request.idempotencyKey, let existing = try await self.store.pipeline(tenant: person.tenant, idempotencyKey: key) {
            return .ok(.init(body: .json(Self.contract(existing, swarm: self.settings.swarm))))
        }
        guard self.planning.enter(person.tenant) else {
            throw APIError(
                .rateLimited,
                "this tenant has \(self.planning.perTenant) pipelines being planned at once; retry when one is done",
                retryAfterSeconds: 5
            )
        }
        defer { self.planning.leave(person.tenant) }
        if let wait = try await self.creationWait(person.tenant) {
            throw APIError(
                .rateLimited,
                "more than \(Int(self.creates.capacity)) pipelines created a minute by this tenant (pipeline.creates-per-minute)",
                retryAfterSeconds: wait.retryAfterSeconds
            )
        }
        guard try await self.store.activeCount(tenant: person.tenant) < self.settings.maxActivePerTenant else {
            throw APIError(
                .rateLimited,
                "this tenant has \(self.settings.maxActivePerTenant) unfinished pipelines (pipeline.max-active-per-tenant)",
                retryAfterSeconds: 30
            )
        }

        // The planner (seed 001's CEO): one JSON call, in the request.
        let planner = request.roles[PipelineCaller.planner.name] ?? RoleSettings.defaults(for: .planner)
        let answer: AnthropicResponse
        do {
            answer = try await self.provider.complete(
                AnthropicMessagesRequest(
                    model: planner.model,
                    maxTokens: self.settings.maxTokens,
                    system: planner.systemPrompt,
                    messages: [AnthropicMessage(role: "user", content: request.goal)],
                    temperature: planner.temperature
                )
            )
        } catch {
            throw ProviderFailure(error).apiError
        }
        let usage = self.settings.prices.usage(model: planner.model, answer.usage)
        let raw = String(answer.text.prefix(16_000))
        guard let parsed = PipelineParser.parse(answer.text) else {
            throw APIError(
                .noPipeline,
                "the planner answered without a stage list: no pipeline was made",
                details: ["rawText": raw, "plannerCostUsd": PipelineWorker.dollars(usage.costUSD)]
            )
        }
        guard parsed.count <= self.settings.maxStages else {
            throw APIError(
                .noPipeline,
                "the planner proposed \(parsed.count) stages; a pipeline has at most \(self.settings.maxStages) (pipeline.max-stages)",
                details: ["rawText": raw]
            )
        }
        let now = Date.nowMilliseconds
        let pipeline = PipelineRecord(
            tenant: person.tenant,
            id: "pl_" + randomHex(bytes: 10),
            title: request.title,
            goal: request.goal,
            unattended: request.unattended,
            export: request.export,
            roles: request.roles,
            status: .running,
            paused: false,
            planner: usage,
            createdBy: person.subject,
            createdAt: now,
            updatedAt: now,
            stages: parsed.enumerated().map { index, stage in
                StageRecord(
                    position: index + 1,
                    role: stage.role,
                    task: String(stage.task.prefix(8000)),
                    researchURLs: Array(stage.researchURLs.prefix(10).map { String($0.prefix(2000)) }),
                    status: .waiting,
                    attempt: 0,
                    fetches: []
                )
            }
        )
        switch try await self.store.create(pipeline, idempotencyKey: request.idempotencyKey, maxActive: self.settings.maxActivePerTenant) {
        case .existing(let existing):
            return .ok(.init(body: .json(Self.contract(existing, swarm: self.settings.swarm))))
        case .created(let created):
            await self.events.record(
                tenant: created.tenant,
                pipeline: created.id,
                key: "planned",
                [
                    .state("running", summary: "planned \(created.stages.count) stages: \(created.title)", title: created.title),
                    .usage(usage, stage: 0, role: "planner"),
                    .log(
                        event: "planned",
                        message: "planned \(created.stages.count) stages ("
                            + created.stages.map(\.role.rawValue).joined(separator: ", ") + ")"
                            + (created.unattended ? ", unattended" : ", each gated"),
                    ),
                ]
            )
            self.started()
            return .created(.init(body: .json(Self.contract(created, swarm: self.settings.swarm))))
        }
    }

    func listPipelines(_ input: Operations.ListPipelines.Input) async throws -> Operations.ListPipelines.Output {
        let person = try Caller.person()
        let limit = input.query.limit ?? 50
        try InputCheck.range(limit, "limit", 1...200)
        var before: (Date, String)?
        if let text = input.query.before {
            guard let cursor = PageCursor(text) else { throw APIError(.invalidRequest, "before is not a cursor this API gave") }
            before = (cursor.at, cursor.id)
        }
        let page = try await self.store.list(tenant: person.tenant, limit: limit, before: before)
        let summaries = page.map { pipeline, count, cost in
            Components.Schemas.PipelineSummary(
                pipelineId: pipeline.id,
                title: pipeline.title,
                status: .init(pipeline.status),
                paused: pipeline.paused,
                unattended: pipeline.unattended,
                createdAt: pipeline.createdAt,
                stageCount: count,
                costUsd: cost
            )
        }
        let next = page.count == limit ? page.last.map { PageCursor(at: $0.0.createdAt, id: $0.0.id).text } : nil
        return .ok(.init(body: .json(.init(pipelines: summaries, nextBefore: next))))
    }

    func getPipeline(_ input: Operations.GetPipeline.Input) async throws -> Operations.GetPipeline.Output {
        let pipeline = try await self.requirePipeline(input.path.pipelineId)
        return .ok(.init(body: .json(Self.contract(pipeline, swarm: self.settings.swarm))))
    }

    func listPipelineArtifacts(_ input: Operations.ListPipelineArtifacts.Input) async throws -> Operations.ListPipelineArtifacts.Output {
        let pipeline = try await self.requirePipeline(input.path.pipelineId)
        let artifacts = try await self.store.artifacts(tenant: pipeline.tenant, pipeline: pipeline.id).map {
            Components.Schemas.Artifact(
                artifactId: $0.id,
                position: $0.position,
                role: .init(rawValue: $0.role) ?? .producer,
                attempt: $0.attempt,
                title: $0.title,
                bytes: $0.bytes,
                createdAt: $0.createdAt,
                exportedPath: $0.exportedPath
            )
        }
        return .ok(.init(body: .json(.init(artifacts: artifacts))))
    }

    func getPipelineArtifact(_ input: Operations.GetPipelineArtifact.Input) async throws -> Operations.GetPipelineArtifact.Output {
        let person = try Caller.person()
        guard Self.isID(input.path.pipelineId), Self.isID(input.path.artifactId),
            let content = try await self.store.artifactContent(
                tenant: person.tenant,
                pipeline: input.path.pipelineId,
                artifact: input.path.artifactId
            )
        else { throw APIError(.notFound, "no such artifact") }
        return .ok(.init(body: .textMarkdown(HTTPBody(content))))
    }

    private func requirePipeline(_ id: String) async throws -> PipelineRecord {
        let person = try Caller.person()
        guard Self.isID(id), let pipeline = try await self.store.pipeline(tenant: person.tenant, id: id) else { throw Self.noPipeline }
        return pipeline
    }

    /// An id this service makes: 1–64 of letters, digits and `_`.
    static func isID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F }
    }
}

extension PipelineHandler {
    /// Nil when `tenant` may create a pipeline now (one taken from both buckets), else how long
    /// until it may.
    func creationWait(_ tenant: String) async throws -> Duration? {
        if let local = self.creates.take(tenant) { return local }
        do {
            return try await self.sharedCreates.take(tenant)
        } catch {
            throw APIError(.serviceUnavailable, "the creation limit cannot be read now; retry shortly", retryAfterSeconds: 1)
        }
    }
}

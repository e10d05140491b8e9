import Foundation
import PipelineRunnerContract

extension PipelineHandler {
    static func contract(_ pipeline: PipelineRecord, swarm: String) -> Components.Schemas.Pipeline {
        Components.Schemas.Pipeline(
            pipelineId: pipeline.id,
            swarmId: swarm,
            title: pipeline.title,
            goal: pipeline.goal,
            status: .init(pipeline.status),
            paused: pipeline.paused,
            unattended: pipeline.unattended,
            createdAt: pipeline.createdAt,
            updatedAt: pipeline.updatedAt,
            finishedAt: pipeline.finishedAt,
            planner: Self.contract(pipeline.planner),
            stages: pipeline.stages.map(Self.contract),
            costUsd: pipeline.costUSD,
            error: pipeline.errorCode.map { .init(code: $0, message: pipeline.errorMessage ?? $0) }
        )
    }

    static func contract(_ usage: UsageRecord) -> Components.Schemas.Usage {
        Components.Schemas.Usage(
            model: usage.model,
            inputTokens: usage.input,
            outputTokens: usage.output,
            cacheCreationInputTokens: usage.cacheCreation,
            cacheReadInputTokens: usage.cacheRead,
            costUsd: usage.costUSD
        )
    }

    static func contract(_ stage: StageRecord) -> Components.Schemas.Stage {
        Components.Schemas.Stage(
            position: stage.position,
            role: .init(rawValue: stage.role.rawValue) ?? .producer,
            task: stage.task,
            researchUrls: stage.researchURLs,
            status: .init(rawValue: stage.status.rawValue) ?? .failed,
            attempt: stage.attempt,
            usage: stage.usage.map(Self.contract),
            startedAt: stage.startedAt,
            finishedAt: stage.finishedAt,
            durationMs: stage.startedAt.flatMap { start in stage.finishedAt.map { Int64($0.timeIntervalSince(start) * 1000) } },
            providerMs: stage.providerMilliseconds,
            gateId: stage.gateID,
            decidedBy: stage.decidedBy,
            reason: stage.reason,
            artifactId: stage.artifactID,
            fetches: stage.fetches.map {
                Components.Schemas.Fetch(
                    url: $0.url,
                    status: .init(rawValue: $0.status.rawValue) ?? .failed,
                    detail: $0.detail,
                    characters: $0.characters
                )
            }
        )
    }
}

extension Components.Schemas.Pipeline.StatusPayload {
    init(_ status: PipelineStatus) {
        self = Self(rawValue: status.rawValue) ?? .failed
    }
}

extension Components.Schemas.PipelineSummary.StatusPayload {
    init(_ status: PipelineStatus) {
        self = Self(rawValue: status.rawValue) ?? .failed
    }
}

import Contracts
import Foundation
import Logging
import ServiceKit

/// Every step of a pipeline as events of its agent (swarm ``PipelineSettings/swarm``, agent =
/// the pipeline id) in the tenant's log, through ingest's service lane: `state` for the fleet,
/// `usage` with tokens and cost, and `log` lines whose `event` field says what happened
/// (`planned`, `stageStarted`, `fetch`, `output`, `stageFinished`, `artifact`, `gate`,
/// `decision`, `error`, `control`). Message ids are derived from the pipeline, stage and
/// attempt, so a retry (or a runner resuming) stores each once.
struct PipelineEvents: Sendable {
    let sender: ServiceEventSender
    let swarm: String
    let logger: Logger

    /// A state frame (the fleet reads `state` and `taskSummary`).
    struct StateFrame: Encodable {
        var type = "state"
        var ts: Int64
        var swarmId: String
        var agentId: String
        var severity = "info"
        var state: String
        var taskSummary: String
        var source = "pipeline-runner"
        var attrs: [String: String]
    }

    /// A usage frame: one provider call's tokens and cost.
    struct UsageFrame: Encodable {
        var type = "usage"
        var ts: Int64
        var swarmId: String
        var agentId: String
        var severity = "info"
        var model: String
        var inputTokens: Int64
        var outputTokens: Int64
        var cacheCreationInputTokens: Int64
        var cacheReadInputTokens: Int64
        var costUsd: Double
        /// 0 for the planner.
        var stage: Int
        var role: String
        var source = "pipeline-runner"
    }

    /// A log frame: strings and numbers only, so readers find `message` where ingest puts it.
    struct LogFrame: Encodable {
        var type = "log"
        var ts: Int64
        var swarmId: String
        var agentId: String
        var severity: String
        var level: String
        var message: String
        var event: String
        var stage: Int?
        var role: String?
        var attempt: Int?
        var artifactId: String?
        var gateId: String?
        var code: String?
        var source = "pipeline-runner"
    }

    /// One step to record.
    enum Step: Sendable {
        case state(String, summary: String, title: String)
        case usage(UsageRecord, stage: Int, role: String)
        case log(
            event: String,
            message: String,
            severity: BusSeverity = .info,
            stage: Int? = nil,
            role: String? = nil,
            attempt: Int? = nil,
            artifactID: String? = nil,
            gateID: String? = nil,
            code: String? = nil
        )
    }

    /// Records `steps` of `pipeline` (message ids `svc-<pipeline>-<key>-<index>`, a prefix no
    /// agent may post, so none can take them first); retried a few
    /// times when ingest is busy; a failure past that is logged, not thrown: the pipeline's own
    /// record in Postgres is the truth, the stream a view of it.
    func record(tenant: String, pipeline: String, key: String, _ steps: [Step], at: Date = Date.nowMilliseconds) async {
        // A queue past its deadline drops the rest.
        if Task.isCancelled { return }
        let now = at
        let ts = Int64(now.timeIntervalSince1970 * 1000)
        var events: [BusServiceEvent] = []
        do {
            for (index, step) in steps.enumerated() {
                events.append(try self.event(step, pipeline: pipeline, msgID: "\(ReservedIDs.serviceMsgIDPrefix)\(pipeline)-\(key)-\(index)", ts: ts))
            }
        } catch {
            self.logger.error("pipeline event not encoded", metadata: ["error": "\(error)"])
            return
        }
        for attempt in 1...4 {
            do {
                try await self.sender.send(tenant: tenant, events)
                return
            } catch let refusal as ServiceEventRefusal where !refusal.retryable {
                self.logger.warning("pipeline events refused", metadata: ["pipeline": "\(pipeline)", "error": "\(refusal)"])
                return
            } catch {
                if attempt == 4 || Task.isCancelled {
                    self.logger.warning("pipeline events not recorded", metadata: ["pipeline": "\(pipeline)", "error": "\(error)"])
                    return
                }
                try? await Task.sleep(for: .milliseconds(200 * attempt))
            }
        }
    }

    private func event(_ step: Step, pipeline: String, msgID: String, ts: Int64) throws -> BusServiceEvent {
        var event = BusServiceEvent()
        event.msgID = msgID
        event.swarmID = self.swarm
        event.agentID = pipeline
        event.occurredUnixNano = ts * 1_000_000
        switch step {
        case .state(let state, let summary, let title):
            event.kind = .state
            event.severity = state == "failed" ? .error : .info
            event.frameTail = try BusServiceEvent.frameTail(
                StateFrame(
                    ts: ts,
                    swarmId: self.swarm,
                    agentId: pipeline,
                    severity: event.severity.name,
                    state: state,
                    taskSummary: String(summary.prefix(500)),
                    attrs: ["pipelineId": pipeline, "title": String(title.prefix(200))]
                )
            )
        case .usage(let usage, let stage, let role):
            event.kind = .usage
            event.severity = .info
            event.frameTail = try BusServiceEvent.frameTail(
                UsageFrame(
                    ts: ts,
                    swarmId: self.swarm,
                    agentId: pipeline,
                    model: usage.model,
                    inputTokens: usage.input,
                    outputTokens: usage.output,
                    cacheCreationInputTokens: usage.cacheCreation,
                    cacheReadInputTokens: usage.cacheRead,
                    costUsd: usage.costUSD,
                    stage: stage,
                    role: role
                )
            )
        case .log(let name, let message, let severity, let stage, let role, let attempt, let artifactID, let gateID, let code):
            event.kind = .log
            event.severity = severity
            event.frameTail = try BusServiceEvent.frameTail(
                LogFrame(
                    ts: ts,
                    swarmId: self.swarm,
                    agentId: pipeline,
                    severity: severity.name,
                    level: severity.name,
                    message: message,
                    event: name,
                    stage: stage,
                    role: role,
                    attempt: attempt,
                    artifactId: artifactID,
                    gateId: gateID,
                    code: code
                )
            )
        }
        return event
    }
}

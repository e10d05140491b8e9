import Anthropic
import Contracts
import Foundation
import Logging
import ServiceKit

/// Runs one pipeline this replica holds, a stage at a time, as seed 001's orchestrator does:
/// the stage's context (task, previous work, its job), a researcher's fetches, one provider call
/// (streamed: the output's growth goes on the stream at a bounded rate), cost from the price
/// table, an artifact; then the gate (attended) or the next stage (unattended). It returns when
/// the pipeline waits (a gate, a pause), ends, or the lease is gone; everything it did is in
/// Postgres, so another runner can take over at any point (an interrupted stage runs again as a
/// new attempt, and an attempt's artifact is stored once).
struct PipelineWorker: Sendable {
    let store: PipelineStore
    let provider: AnthropicClient
    let fetcher: ResearchFetcher
    let events: PipelineEvents
    let gates: GateRequests
    let exporter: ArtifactExporter?
    let settings: PipelineSettings
    let owner: String
    let logger: Logger

    func run(_ claim: PipelineStore.Claim) async {
        let queue = PipelineEventQueue(events: self.events, tenant: claim.tenant, pipeline: claim.id)
        await self.run(claim, queue: queue)
        // The lease is held until the run's events are sent.
        await queue.finish()
    }

    private func run(_ claim: PipelineStore.Claim, queue: PipelineEventQueue) async {
        do {
            while !Task.isCancelled {
                guard let pipeline = try await self.store.pipeline(tenant: claim.tenant, id: claim.id),
                    pipeline.status == .running || pipeline.status == .awaitingApproval, !pipeline.paused
                else {
                    return
                }
                switch PipelineStep.next(pipeline.stages) {
                case .complete:
                    if try await self.store.complete(owner: self.owner, claim) {
                        queue.record(
                            key: "done",
                            [
                                .log(
                                    event: "completed",
                                    message: "pipeline completed: \(pipeline.stages.count) stages, $\(Self.dollars(pipeline.costUSD))"
                                ),
                                .state("completed", summary: "completed \(pipeline.stages.count) stages", title: pipeline.title),
                            ]
                        )
                    }
                    return
                case .awaitDecision(let position):
                    // A finished stage whose gate was never opened (the runner stopped, or
                    // approvals failed, between the two): open it now (its key finds the same gate).
                    if let stage = pipeline.stages.first(where: { $0.position == position }), stage.gateID == nil {
                        try await self.openGate(for: stage, of: pipeline, claim, queue: queue)
                    }
                    return
                case .ended:
                    return
                case .run(let position):
                    guard try await self.runStage(position, of: pipeline, claim, queue: queue) else { return }
                }
            }
        } catch is CancellationError {
            return
        } catch {
            self.logger.warning(
                "pipeline run interrupted; it resumes later",
                metadata: ["pipeline": "\(claim.id)", "error": "\(String(reflecting: error))"]
            )
            // Not at once: what failed (Postgres, approvals) needs a moment.
            try? await Task.sleep(for: .seconds(2))
        }
    }

    /// Runs one stage; true when the pipeline goes straight on to its next stage.
    private func runStage(_ position: Int, of pipeline: PipelineRecord, _ claim: PipelineStore.Claim, queue: PipelineEventQueue) async throws -> Bool
    {
        guard let stage = pipeline.stages.first(where: { $0.position == position }) else { return false }
        let role = stage.role
        let roleSettings = pipeline.settings(for: role)
        guard let attempt = try await self.store.startStage(owner: self.owner, claim, position: position, model: roleSettings.model) else {
            return false
        }
        let total = pipeline.stages.count
        let key = "s\(position)-a\(attempt)"
        // A stage that keeps failing after its call (or keeps losing its runner) is not paid for forever.
        guard attempt <= Self.maxAttempts else {
            try await self.stop(
                claim,
                pipeline,
                code: "StageAttemptsExhausted",
                message: "Pipeline stopped: stage \(position) was started \(Self.maxAttempts) times without finishing",
                stage: position,
                role: role,
                attempt: attempt,
                key: "\(key)-exhausted",
                queue: queue
            )
            return false
        }
        queue.record(
            key: "\(key)-start",
            [
                .state("running", summary: "stage \(position)/\(total) \(role.rawValue): \(stage.task)", title: pipeline.title),
                .log(
                    event: "stageStarted",
                    message: "stage \(position)/\(total) \(role.displayName) started: \(stage.task)",
                    stage: position,
                    role: role.rawValue,
                    attempt: attempt
                ),
            ]
        )
        let previous = pipeline.stages.filter { $0.position < position }.map { StageContext.Previous(role: $0.role, output: $0.output ?? "") }
        var context = StageContext.build(goal: pipeline.goal, previous: previous, job: stage.task)
        if role == .researcher {
            var fetches: [FetchRecord] = []
            for url in StageContext.researchURLs(task: stage.task, listed: stage.researchURLs) {
                let (record, text) = await self.fetcher.fetch(url)
                fetches.append(record)
                if let text { context += StageContext.fetched(url: url, text: text) }
            }
            if !fetches.isEmpty {
                try await self.store.recordFetches(claim, position: position, attempt: attempt, fetches)
                queue.record(
                    key: "\(key)-fetch",
                    fetches.map {
                        .log(
                            event: "fetch",
                            message: "\($0.status.rawValue) \($0.url)" + ($0.detail.map { ": \($0)" } ?? ""),
                            severity: $0.status == .fetched ? .info : .warn,
                            stage: position,
                            role: role.rawValue,
                            attempt: attempt
                        )
                    }
                )
            }
        }

        let request = AnthropicMessagesRequest(
            model: roleSettings.model,
            maxTokens: self.settings.maxTokens,
            system: roleSettings.systemPrompt,
            messages: [AnthropicMessage(role: "user", content: context)],
            temperature: roleSettings.temperature
        )
        let growth = OutputGrowth(
            queue: queue,
            key: key,
            stage: position,
            role: role.rawValue,
            attempt: attempt,
            perSecond: self.settings.outputEventsPerSecond
        )
        let response: AnthropicResponse
        let called = ContinuousClock.now
        do {
            response = try await self.provider.stream(request) { text in await growth.add(text) }
        } catch {
            if Task.isCancelled || error == .cancelled { throw CancellationError() }
            let failure = ProviderFailure(error)
            try await self.stop(
                claim,
                pipeline,
                code: failure.code.rawValue,
                message: failure.message,
                logged: "\(failure.message) (\(error))",
                stage: position,
                role: role,
                attempt: attempt,
                key: "\(key)-error",
                queue: queue
            )
            return false
        }
        let providerTime = ContinuousClock.now - called
        await growth.finish()
        // Postgres text holds no NUL: a model that emits one must not fail the stage forever.
        let output = response.text.contains("\u{0}") ? response.text.replacingOccurrences(of: "\u{0}", with: "") : response.text

        let usage = self.settings.prices.usage(model: roleSettings.model, response.usage)
        let title = "\(role.displayName) — \(pipeline.title)"
        // The file is written before the transaction that stores the artifact records its path,
        // so a pipeline is never seen completed with an export still to come.
        let createdAt = Date()
        var exported: String?
        if pipeline.export, let exporter = self.exporter {
            do {
                exported = try exporter.export(tenant: claim.tenant, title: pipeline.title, role: role, createdAt: createdAt, content: output)
            } catch {
                self.logger.warning("artifact not exported", metadata: ["pipeline": "\(claim.id)", "error": "\(error)"])
            }
        }
        // An error may come after the COMMIT (its answer lost): the file stays then, as its path
        // may be stored. Only a stage this runner no longer holds (nil) takes its file back.
        guard
            let finished = try await self.store.finishStage(
                owner: self.owner,
                claim,
                position: position,
                attempt: attempt,
                usage: usage,
                providerMilliseconds: providerTime.components.seconds * 1000 + providerTime.components.attoseconds / 1_000_000_000_000_000,
                output: output,
                artifact: (id: "art_" + randomHex(bytes: 12), role: role, title: title, createdAt: createdAt, exportedPath: exported),
                unattended: pipeline.unattended,
                lastStage: position == total
            )
        else {
            self.unexport(exported)
            return false
        }
        var steps: [PipelineEvents.Step] = [
            .usage(usage, stage: position, role: role.rawValue),
            .log(
                event: "artifact",
                message: "\(title) (\(output.utf8.count) bytes)",
                stage: position,
                role: role.rawValue,
                attempt: attempt,
                artifactID: finished.artifactID
            ),
            .log(
                event: "stageFinished",
                message:
                    "stage \(position)/\(total) \(role.displayName) finished: \(usage.input) in, \(usage.output) out, $\(Self.dollars(usage.costUSD))"
                    + (pipeline.unattended ? "; approved (unattended)" : "; waiting for approval"),
                stage: position,
                role: role.rawValue,
                attempt: attempt,
                artifactID: finished.artifactID
            ),
        ]
        if finished.status == .completed {
            steps.append(.log(event: "completed", message: "pipeline completed: \(total) stages"))
            steps.append(.state("completed", summary: "completed \(total) stages", title: pipeline.title))
        }
        queue.record(
            key: "\(key)-done",
            steps
        )
        guard !pipeline.unattended else { return finished.status == .running }
        var finishedStage = stage
        finishedStage.attempt = attempt
        try await self.openGate(for: finishedStage, of: pipeline, claim, queue: queue)
        return false
    }

    /// Removes a file exported for an artifact that was not stored (the lease was lost): the
    /// attempt that stores the stage's artifact writes its own (another name: to the millisecond).
    private func unexport(_ path: String?) {
        guard let path, let exporter = self.exporter else { return }
        exporter.remove(path)
    }

    /// Opens the gate of a finished stage (approvals finds the same gate by its key); a
    /// refusal that no retry changes stops the pipeline with approvals' reason.
    private func openGate(for stage: StageRecord, of pipeline: PipelineRecord, _ claim: PipelineStore.Claim, queue: PipelineEventQueue) async throws {
        let position = stage.position
        let attempt = stage.attempt
        let role = stage.role
        let total = pipeline.stages.count
        let key = "s\(position)-a\(attempt)"
        let gateID: String
        do {
            gateID = try await self.gates.open(
                ServiceGateRequest(
                    tenant: claim.tenant,
                    swarmId: self.settings.swarm,
                    agentId: claim.id,
                    idempotencyKey: GateKey.make(pipeline: claim.id, position: position, attempt: attempt),
                    summary: "Approve stage \(position)/\(total) (\(role.displayName)) of “\(pipeline.title)”?",
                    risk: "medium",
                    tool: "pipeline-stage",
                    expiresInSeconds: self.settings.gateExpirySeconds
                )
            )
        } catch let refusal as APIError where refusal.code == .invalidRequest {
            try await self.stop(
                claim,
                pipeline,
                code: "GateRefused",
                message: "Pipeline stopped: \(refusal.message)",
                stage: position,
                key: "\(key)-gate-refused",
                queue: queue
            )
            return
        }
        try await self.store.recordGate(claim, position: position, gateID: gateID)
        queue.record(
            key: "\(key)-gate",
            [
                .log(
                    event: "gate",
                    message: "stage \(position)/\(total) waits for approval",
                    stage: position,
                    role: role.rawValue,
                    attempt: attempt,
                    gateID: gateID
                ),
                .state("waiting_approval", summary: "stage \(position)/\(total) \(role.rawValue) waits for approval", title: pipeline.title),
            ]
        )
    }

    /// Ends the pipeline with an error (if this runner still holds it and, with `attempt`, that
    /// attempt is the stage's current one), and records it on the stream.
    private func stop(
        _ claim: PipelineStore.Claim,
        _ pipeline: PipelineRecord,
        code: String,
        message: String,
        logged: String? = nil,
        stage: Int,
        role: PipelineRole? = nil,
        attempt: Int? = nil,
        key: String,
        queue: PipelineEventQueue
    ) async throws {
        guard
            try await self.store.fail(
                owner: self.owner,
                claim,
                position: attempt == nil ? nil : stage,
                attempt: attempt,
                code: code,
                message: message
            )
        else { return }
        queue.record(
            key: key,
            [
                .log(event: "error", message: logged ?? message, severity: .error, stage: stage, role: role?.rawValue, attempt: attempt, code: code),
                .state("failed", summary: message, title: pipeline.title),
            ]
        )
    }

    /// Attempts a stage may start before the pipeline fails.
    /// (A graceful stop mid-call costs an attempt too: a rolling restart of three replicas must
    /// not exhaust them.)
    static let maxAttempts = 5

    static func dollars(_ value: Double) -> String {
        String(format: "%.4f", value)
    }
}

/// A running stage's output as it grows, queued as `output` log events at most `perSecond` a
/// second, each carrying the text since the previous one (in pieces of at most 8000 bytes).
/// Queuing never holds up the provider's stream, and keeps the output before the stage's end.
actor OutputGrowth {
    let queue: PipelineEventQueue
    let key: String
    let stage: Int
    let role: String
    let attempt: Int
    let interval: Duration?
    private var pending = ""
    private var sent = 0
    private var last = ContinuousClock.now

    static let maxPieceBytes = 8000

    init(queue: PipelineEventQueue, key: String, stage: Int, role: String, attempt: Int, perSecond: Int) {
        self.queue = queue
        self.key = key
        self.stage = stage
        self.role = role
        self.attempt = attempt
        self.interval = perSecond > 0 ? .milliseconds(1000 / perSecond) : nil
    }

    func add(_ text: String) {
        guard let interval = self.interval else { return }
        self.pending += text
        if ContinuousClock.now - self.last >= interval { self.send() }
    }

    /// Queues what is left.
    func finish() {
        self.send()
    }

    private func send() {
        guard self.interval != nil, !self.pending.isEmpty else { return }
        let steps = Self.pieces(self.pending).map {
            PipelineEvents.Step.log(event: "output", message: $0, stage: self.stage, role: self.role, attempt: self.attempt)
        }
        self.pending = ""
        self.last = ContinuousClock.now
        self.queue.record(key: "\(self.key)-o\(self.sent)", steps)
        self.sent += 1
    }

    /// `text` cut into pieces of at most ``maxPieceBytes`` UTF-8 bytes, at character boundaries.
    static func pieces(_ text: String) -> [String] {
        var pieces: [String] = []
        var piece = ""
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            if bytes + size > Self.maxPieceBytes, !piece.isEmpty {
                pieces.append(piece)
                piece = ""
                bytes = 0
            }
            piece.append(character)
            bytes += size
        }
        if !piece.isEmpty { pieces.append(piece) }
        return pieces
    }
}

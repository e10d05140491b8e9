import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle

/// The pipelines' command queue: every control command for an agent of the pipelines' swarm
/// (control-api's pause, resume and terminate; approvals' gate outcomes), through one durable
/// consumer of the control stream (`pipeline_runner`) that the replicas share. A command is
/// applied once (``PipelineStore/apply(_:tenant:pipeline:commandID:actor:reason:)``), its outcome
/// reported to control-api (``Subjects/serviceControlAcks``) and recorded on the stream, the
/// change announced to the replicas, and only then is the delivery acknowledged: a failure
/// leaves it to be delivered again, which changes nothing more.
struct PipelineCommands: Service {
    let store: PipelineStore
    let events: PipelineEvents
    let jetStream: JetStream
    let connection: NATSConnection
    let subjects: Subjects
    let swarm: String
    let logger: Logger

    static let consumerName = "pipeline_runner"

    func run() async throws {
        await consumeUntilShutdown(logger: self.logger, waiting: "waiting for the control stream") { try await self.consume() }
    }

    private func consume() async throws {
        let configuration = ConsumerConfiguration(
            durableName: Self.consumerName,
            filterSubject: self.subjects.controlCommands(swarm: self.swarm),
            ackWait: .seconds(30)
        )
        try await self.jetStream.createOrUpdateConsumer(stream: self.subjects.controlStreamName, configuration)
        let consumer = self.jetStream.consumer(stream: self.subjects.controlStreamName, name: Self.consumerName)
        while !Task.isCancelled {
            // One at a time: a pull returns as soon as its batch is full, and a command waits on nothing.
            for message in try await consumer.fetch(batch: 1, expires: .seconds(5)) {
                guard let command = try? BusControlCommand(serializedBytes: message.payload) else {
                    try? message.term()
                    continue
                }
                do {
                    try await self.handle(command)
                    try message.ack()
                } catch {
                    self.logger.warning(
                        "pipeline command not applied; it will be delivered again",
                        metadata: ["command": "\(command.commandID)", "error": "\(String(reflecting: error))"]
                    )
                    try? message.nak(delay: .seconds(1))
                }
            }
        }
    }

    func handle(_ command: BusControlCommand) async throws {
        let tenant = command.tenantID
        let pipeline = command.agentID
        switch command.action {
        case .gate:
            let outcome = command.gate
            guard
                let decision = try await self.store.decide(
                    tenant: tenant,
                    pipeline: pipeline,
                    idempotencyKey: outcome.idempotencyKey,
                    gateStatus: outcome.status,
                    allow: outcome.allow,
                    decidedBy: outcome.decidedBy,
                    reason: outcome.reason
                )
            else { return }
            let verb = decision.approved ? "approved" : decision.status == .stopped ? "cancelled" : "rejected"
            var steps: [PipelineEvents.Step] = [
                .log(
                    event: "decision",
                    message: "stage \(decision.position) \(verb) by \(outcome.decidedBy.isEmpty ? "approvals" : outcome.decidedBy)"
                        + (outcome.reason.isEmpty ? "" : ": \(outcome.reason)"),
                    severity: decision.approved ? .info : .warn,
                    stage: decision.position,
                    gateID: outcome.gateID
                )
            ]
            if let message = decision.message {
                let stopped = decision.status == .stopped
                steps.append(
                    .log(
                        event: "error",
                        message: message,
                        severity: .error,
                        stage: decision.position,
                        code: stopped ? "GateCancelled" : "UserRejected"
                    )
                )
                steps.append(.state(stopped ? "terminated" : "failed", summary: message, title: ""))
            } else {
                steps.append(.state("running", summary: "stage \(decision.position) approved", title: ""))
            }
            await self.events.record(tenant: tenant, pipeline: pipeline, key: "gate-\(outcome.gateID)", steps)
            PipelineChange(tenant: tenant, pipelineId: pipeline, change: "decision").publish(on: self.connection, subjects: self.subjects)
        case .pause, .resume, .terminate:
            let control: PipelineStore.Control = command.action == .pause ? .pause : command.action == .resume ? .resume : .terminate
            let result: PipelineStore.ControlResult
            if command.expiresUnixNano > 0, command.expiresUnixNano < Int64(Date().timeIntervalSince1970 * 1e9) {
                result = PipelineStore.ControlResult(outcome: "expired", state: "unknown", message: "the command expired", changed: false)
            } else {
                result = try await self.store.apply(
                    control,
                    tenant: tenant,
                    pipeline: pipeline,
                    commandID: command.commandID,
                    actor: command.actor.isEmpty ? "an operator" : command.actor,
                    reason: command.reason
                )
            }
            if result.changed {
                PipelineChange(tenant: tenant, pipelineId: pipeline, change: control.rawValue).publish(on: self.connection, subjects: self.subjects)
                await self.events.record(
                    tenant: tenant,
                    pipeline: pipeline,
                    key: "ctl-\(command.commandID)",
                    [
                        .log(
                            event: "control",
                            message: "\(control.rawValue) by \(command.actor.isEmpty ? "an operator" : command.actor)"
                                + (command.reason.isEmpty ? "" : ": \(command.reason)"),
                            severity: control == .terminate ? .warn : .info
                        ),
                        .state(result.state, summary: "\(control.rawValue)d by an operator", title: ""),
                    ]
                )
            }
            try await self.acknowledge(command, result)
        default:
            // Pipelines take no requests: rejected, so the operator sees why.
            try await self.acknowledge(
                command,
                PipelineStore.ControlResult(
                    outcome: "rejected",
                    state: "unknown",
                    message: "a pipeline takes pause, resume and terminate only",
                    changed: false
                )
            )
        }
    }

    /// Reports the outcome to control-api, which records it as the agent's acknowledgement.
    private func acknowledge(_ command: BusControlCommand, _ result: PipelineStore.ControlResult) async throws {
        var ack = BusControlAck()
        ack.commandID = command.commandID
        ack.tenantID = command.tenantID
        ack.agentID = command.agentID
        ack.outcome =
            switch result.outcome {
            case "applied": .applied
            case "noop": .noop
            case "expired": .expired
            case "failed": .failed
            default: .rejected
            }
        ack.state = result.state
        ack.message = result.message ?? ""
        ack.ackedUnixNano = Int64(Date().timeIntervalSince1970 * 1e9)
        let reply = try await self.connection.request(
            try ack.serializedBytes() as [UInt8],
            to: self.subjects.serviceControlAcks,
            timeout: .seconds(5)
        )
        let answer = String(decoding: reply.payload, as: UTF8.self)
        // A command control-api does not know (published by someone else) is not retried.
        if !answer.isEmpty && !answer.hasPrefix("no command") && !answer.hasPrefix("an invalid") {
            throw APIError(.serviceUnavailable, "control-api did not record the outcome: \(answer)")
        }
    }
}

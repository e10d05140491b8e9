import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle

/// Cancels the pending gates of agents an operator terminates: reads every control command
/// from control-api's stream through a durable consumer of its own (`approvals_terminations`,
/// new commands only), and for each `terminate` cancels that agent's pending gates (so the
/// waiting agent gets `cancelled` and the phone stops showing them). A command is
/// acknowledged once its gates are cancelled; a failure leaves it to be delivered again.
struct TerminationWatcher: Service {
    let store: GateStore
    let outbox: GateOutbox
    let jetStream: JetStream
    let subjects: Subjects
    let logger: Logger

    static let consumerName = "approvals_terminations"

    func run() async throws {
        // control-api creates the stream; until it has, there is nothing to watch.
        await consumeUntilShutdown(logger: self.logger, waiting: "waiting for the control stream") { try await self.consume() }
    }

    private func consume() async throws {
        var configuration = ConsumerConfiguration(
            durableName: Self.consumerName,
            filterSubject: self.subjects.allControlCommands,
            ackWait: .seconds(30)
        )
        configuration.deliverPolicy = "new"
        try await self.jetStream.createOrUpdateConsumer(stream: self.subjects.controlStreamName, configuration)
        let consumer = self.jetStream.consumer(stream: self.subjects.controlStreamName, name: Self.consumerName)
        while !Task.isCancelled {
            for message in try await consumer.fetch(batch: 64, expires: .seconds(5)) {
                guard let command = try? BusControlCommand(serializedBytes: message.payload) else {
                    try? message.term()
                    continue
                }
                if command.action == .terminate {
                    let cancelled = try await self.store.cancel(
                        tenant: command.tenantID,
                        swarm: command.swarmID,
                        agent: command.agentID,
                        actor: command.actor.isEmpty ? "system" : command.actor,
                        now: Date.nowMilliseconds
                    )
                    if !cancelled.isEmpty { self.outbox.kick() }
                }
                try message.ack()
            }
        }
    }
}

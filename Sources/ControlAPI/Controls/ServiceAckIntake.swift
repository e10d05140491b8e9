import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle

/// Records the outcomes of commands sent to agents that are services (pipeline-runner's
/// pipelines): a `ControlAck` arrives as a NATS request on ``Subjects/serviceControlAcks``
/// (replicas share it as queue group `control-api`) and is recorded as an agent's
/// acknowledgement is (once, with its audit entry). The service acknowledges the JetStream
/// delivery itself, through its own consumer. Answered with an empty payload once recorded, or
/// with the reason it was not. Only services hold credentials for the subject.
struct ServiceAckIntake: Service {
    let store: ControlStore
    let connection: NATSConnection
    let subjects: Subjects
    let logger: Logger
    /// The subject's responder (readiness `service-acks`).
    let responder: NATSResponder

    /// Acknowledgements recorded at once per replica (each a transaction that locks its own
    /// command's row, on a few of the pool's connections); past it the subscription's buffer
    /// holds the rest (a thousand; newer ones are dropped: the service's request times out, and
    /// its command is delivered to it again, so it reports again).
    static let maxConcurrent = 4

    init(store: ControlStore, connection: NATSConnection, subjects: Subjects, logger: Logger) {
        self.store = store
        self.connection = connection
        self.subjects = subjects
        self.logger = logger
        self.responder = NATSResponder(
            name: "service-acks",
            connection: connection,
            subject: subjects.serviceControlAcks,
            queue: "control-api",
            buffering: .dropNewest(maxMessages: 1_000),
            maxConcurrent: Self.maxConcurrent,
            logger: logger
        )
    }

    func run() async throws {
        try await self.responder.serve { message in
            guard let reply = message.reply else { return }
            let answer = await self.record(message.payload)
            try? self.connection.publish(Array(answer.utf8), to: reply)
        }
    }

    /// Records the acknowledgement in `payload`; returns "" or why it was not recorded.
    private func record(_ payload: [UInt8]) async -> String {
        guard let ack = try? BusControlAck(serializedBytes: payload) else { return "not a ControlAck" }
        guard EntityID.problem(ack.tenantID, field: "tenant") == nil, EntityID.problem(ack.commandID, field: "commandId") == nil,
            let outcome = CommandAcknowledgement.Outcome(ack.outcome), (1...64).contains(ack.state.utf8.count),
            ack.message.utf8.count <= 1000
        else { return "an invalid ControlAck" }
        do {
            guard let target = try await self.store.commandTarget(tenant: ack.tenantID, commandID: ack.commandID), target.agent == ack.agentID else {
                return "no command \(ack.commandID) for agent \(ack.agentID)"
            }
            _ = try await self.store.acknowledge(
                tenant: ack.tenantID,
                CommandAcknowledgement(commandID: ack.commandID, outcome: outcome, state: ack.state, message: ack.message.isEmpty ? nil : ack.message)
            )
            return ""
        } catch {
            self.logger.warning("service acknowledgement not recorded", metadata: ["error": "\(String(reflecting: error))"])
            return "not recorded; retry"
        }
    }
}

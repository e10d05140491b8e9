import Contracts
import Foundation
import Logging
import PostgresNIO
import ServiceKit
import ServiceLifecycle
import SwiftProtobuf

/// Sends what gate changes left in the outbox (through ServiceKit's ``OutboxRelay``): outcomes
/// to the agents' command queues (JetStream, de-duplicated by command id) first, events to
/// ingest (acknowledged after commit, de-duplicated by msgId, batched per tenant), openings to
/// the gates stream. Ingest being down delays events, never outcomes.
final class GateOutbox: Service, Sendable {
    let jetStream: JetStream
    let subjects: Subjects
    let relay: OutboxRelay

    init(client: PostgresClient, jetStream: JetStream, subjects: Subjects, logger: Logger) {
        self.jetStream = jetStream
        self.subjects = subjects
        let send = Sender(jetStream: jetStream, subjects: subjects)
        self.relay = OutboxRelay(
            client: client,
            policy: .init(
                lockName: "approvals outbox",
                first: [GateMessages.Item.Kind.outcome.rawValue],
                batched: [GateMessages.Item.Kind.event.rawValue]
            ),
            logger: logger,
            send: send.send
        )
    }

    /// Creates (or updates) the gates stream: openings are kept a day for the notifier.
    func prepare() async throws {
        try await self.jetStream.prepareNoticeStream(name: self.subjects.gateStreamName, subject: self.subjects.allGateOpenings)
    }

    /// Starts a round now (a change has committed).
    func kick() {
        self.relay.kick()
    }

    /// A settled gate's outcome, published at once (the agent waits for it) without waiting
    /// for a round; the round publishes it again, which its command id makes a no-op.
    func publishOutcome(_ command: BusControlCommand) {
        let sender = Sender(jetStream: self.jetStream, subjects: self.subjects)
        Task { try? await sender.publish(command) }
        self.kick()
    }

    func run() async throws {
        try await self.relay.run()
    }

    /// Sends what waits; returns the number of rows sent.
    @discardableResult
    func round() async throws -> Int {
        try await self.relay.round()
    }

    /// How each kind of row is sent.
    struct Sender: Sendable {
        let jetStream: JetStream
        let subjects: Subjects

        /// Publishes an outcome into its agent's queue (stored once per command id).
        func publish(_ command: BusControlCommand) async throws {
            let subject = self.subjects.controlCommand(tenant: command.tenantID, swarm: command.swarmID, agent: command.agentID)
            _ = try await self.jetStream.publish(try command.serializedBytes() as [UInt8], to: subject, messageID: command.commandID)
        }

        func send(kind: String, tenant: String, payloads: [[UInt8]]) async throws {
            switch GateMessages.Item.Kind(rawValue: kind) {
            case .outcome:
                try await self.publish(try BusControlCommand(serializedBytes: payloads[0]))
            case .event:
                let events = try payloads.map { try BusServiceEvent(serializedBytes: $0) }
                try await ServiceEventSender(connection: self.jetStream.connection, subjects: self.subjects).send(tenant: tenant, events)
            case .notice:
                let notice = try JSONDecoder().decode(GateNotice.self, from: Data(payloads[0]))
                _ = try await self.jetStream.publish(
                    payloads[0],
                    to: self.subjects.gateOpened(tenant: tenant),
                    messageID: "gate-\(notice.gateId)-opened"
                )
            case nil:
                throw ServiceKitError(.natsOperation, "unknown outbox kind \(kind)")
            }
        }
    }
}

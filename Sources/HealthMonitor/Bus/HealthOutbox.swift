import Contracts
import Foundation
import Logging
import PostgresNIO
import ServiceKit
import ServiceLifecycle

/// Sends what incident changes left in the outbox (through ServiceKit's ``OutboxRelay``):
/// events to ingest (acknowledged after commit, de-duplicated by msgId, batched per tenant),
/// notices to the incidents stream (de-duplicated by message id) for the notifier.
final class HealthOutbox: Service, Sendable {
    let jetStream: JetStream
    let subjects: Subjects
    let relay: OutboxRelay

    init(client: PostgresClient, jetStream: JetStream, subjects: Subjects, logger: Logger) {
        self.jetStream = jetStream
        self.subjects = subjects
        self.relay = OutboxRelay(
            client: client,
            policy: .init(lockName: "health outbox", batched: [IncidentMessages.Item.Kind.event.rawValue]),
            logger: logger
        ) { kind, tenant, payloads in
            switch IncidentMessages.Item.Kind(rawValue: kind) {
            case .event:
                let events = try payloads.map { try BusServiceEvent(serializedBytes: $0) }
                try await ServiceEventSender(connection: jetStream.connection, subjects: subjects).send(tenant: tenant, events)
            case .notice:
                let notice = try JSONDecoder().decode(IncidentNotice.self, from: Data(payloads[0]))
                _ = try await jetStream.publish(
                    payloads[0],
                    to: subjects.incidentChanged(tenant: tenant),
                    messageID: "incident-\(notice.incidentId)-\(notice.status)"
                )
            case nil:
                throw ServiceKitError(.natsOperation, "unknown outbox kind \(kind)")
            }
        }
    }

    /// Creates (or updates) the incidents stream: changes are kept a day for the notifier.
    func prepare() async throws {
        try await self.jetStream.prepareNoticeStream(name: self.subjects.incidentStreamName, subject: self.subjects.allIncidentChanges)
    }

    func kick() {
        self.relay.kick()
    }

    func run() async throws {
        try await self.relay.run()
    }
}

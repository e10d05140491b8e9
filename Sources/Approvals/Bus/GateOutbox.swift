import Contracts
import Foundation
import Logging
import PostgresNIO
import ServiceKit
import ServiceLifecycle
import SwiftProtobuf
import Synchronization

/// Sends what gate changes left in the outbox, then deletes it: outcomes to the agents' command
/// queues (JetStream, de-duplicated by command id), events to ingest (acknowledged after
/// commit, de-duplicated by msgId), openings to the gates stream. Each row is sent at least
/// once; a crash between sending and deleting sends it again, which its id makes harmless.
///
/// A round runs at once when a change commits (``kick()``) and every half second while rows
/// remain. Kinds do not wait for each other: ingest being down delays events, never the
/// outcomes agents wait for; within a kind, rows go in order. Replicas share the rows
/// (`SKIP LOCKED`).
final class GateOutbox: Service, Sendable {
    let client: PostgresClient
    let jetStream: JetStream
    let subjects: Subjects
    let logger: Logger
    private let wakeUps: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    /// Rows taken per round.
    static let batch = 200

    init(client: PostgresClient, jetStream: JetStream, subjects: Subjects, logger: Logger) {
        self.client = client
        self.jetStream = jetStream
        self.subjects = subjects
        self.logger = logger
        (self.wakeUps, self.wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Creates (or updates) the gates stream: openings are kept a day for the notifier.
    func prepare() async throws {
        _ = try await self.jetStream.createOrUpdateStream(
            StreamConfiguration(
                name: self.subjects.gateStreamName,
                subjects: [self.subjects.allGateOpenings],
                maxAge: .seconds(86_400),
                duplicateWindow: .seconds(600)
            )
        )
    }

    /// Starts a round now (a change has committed).
    func kick() {
        self.wake.yield()
    }

    /// A settled gate's outcome, published at once (the agent waits for it) without waiting
    /// for a round; the round publishes it again, which its command id makes a no-op.
    func publishOutcome(_ command: BusControlCommand) {
        guard let payload: [UInt8] = try? command.serializedBytes() else { return }
        let subject = self.subjects.controlCommand(tenant: command.tenantID, swarm: command.swarmID, agent: command.agentID)
        Task {
            _ = try? await self.jetStream.publish(payload, to: subject, messageID: command.commandID)
        }
        self.kick()
    }

    func run() async throws {
        let wake = self.wake
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                wake.yield()
            }
        }
        defer { ticker.cancel() }
        // Ends at graceful shutdown; what is left is sent by the next start (or another replica).
        await cancelWhenGracefulShutdown {
            for await _ in self.wakeUps {
                do {
                    try await self.round()
                } catch  where !Task.isCancelled {
                    self.logger.warning("outbox round failed", metadata: ["error": "\(String(reflecting: error))"])
                } catch {
                    return  // shutting down: what is left is sent at the next start
                }
            }
        }
    }

    /// Sends what waits; returns the number of rows sent.
    @discardableResult
    func round() async throws -> Int {
        try await self.client.transaction(logger: self.logger) { connection in
            let rows = try await connection.query(
                "SELECT id, tenant_id, kind, payload FROM outbox ORDER BY id LIMIT \(Self.batch) FOR UPDATE SKIP LOCKED",
                logger: self.logger
            )
            var items: [(id: Int64, tenant: String, kind: String, payload: ByteBuffer)] = []
            for try await (id, tenant, kind, payload) in rows.decode((Int64, String, String, ByteBuffer).self) {
                items.append((id, tenant, kind, payload))
            }
            var sent: [Int64] = []
            var failed: [Int64] = []
            var blocked: Set<String> = []
            var index = 0
            while index < items.count {
                let item = items[index]
                if blocked.contains(item.kind) {
                    index += 1
                    continue
                }
                // Consecutive events of one tenant go to ingest as one batch.
                var end = index + 1
                if item.kind == GateMessages.Item.Kind.event.rawValue {
                    while end < items.count, end - index < ServiceEventSender.maxBatch, items[end].kind == item.kind, items[end].tenant == item.tenant
                    {
                        end += 1
                    }
                }
                let group = items[index..<end]
                do {
                    try await self.send(kind: item.kind, tenant: item.tenant, payloads: group.map { Array(buffer: $0.payload) })
                    sent += group.map(\.id)
                } catch  where Task.isCancelled {
                    throw CancellationError()
                } catch {
                    blocked.insert(item.kind)
                    failed += group.map(\.id)
                    self.logger.warning(
                        "outbox items not sent yet",
                        metadata: ["kind": "\(item.kind)", "count": "\(group.count)", "error": "\(String(reflecting: error))"]
                    )
                }
                index = end
            }
            if !sent.isEmpty {
                try await connection.query("DELETE FROM outbox WHERE id = ANY(\(sent))", logger: self.logger)
            }
            if !failed.isEmpty {
                try await connection.query("UPDATE outbox SET attempts = attempts + 1 WHERE id = ANY(\(failed))", logger: self.logger)
            }
            return sent.count
        }
    }

    private func send(kind: String, tenant: String, payloads: [[UInt8]]) async throws {
        switch GateMessages.Item.Kind(rawValue: kind) {
        case .outcome:
            let command = try BusControlCommand(serializedBytes: payloads[0])
            _ = try await self.jetStream.publish(
                payloads[0],
                to: self.subjects.controlCommand(tenant: command.tenantID, swarm: command.swarmID, agent: command.agentID),
                messageID: command.commandID
            )
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

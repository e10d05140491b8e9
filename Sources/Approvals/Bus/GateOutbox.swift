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
/// A round runs at once when a change commits (``kick()``) and every half second. One replica
/// sends at a time, outcomes first; a failure holds back only the later rows of its kind and
/// tenant (ingest being down delays events, never outcomes); a row ingest refuses for good is
/// kept with `attempts` = ``dead`` and not sent again.
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
        Task { try? await self.publish(command) }
        self.kick()
    }

    /// Publishes an outcome into its agent's queue (stored once per command id).
    private func publish(_ command: BusControlCommand) async throws {
        let subject = self.subjects.controlCommand(tenant: command.tenantID, swarm: command.swarmID, agent: command.agentID)
        _ = try await self.jetStream.publish(try command.serializedBytes() as [UInt8], to: subject, messageID: command.commandID)
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

    /// Rows ingest will never take (refused, not retryable) get this many attempts and are kept,
    /// not sent again, for an operator to look at.
    static let dead = 1_000_000

    /// Sends what waits; returns the number of rows sent. One replica sends at a time (a
    /// transaction-scoped advisory lock), so a gate's events reach the log in the order they
    /// were written; outcomes go first; a row that fails holds back the later rows of its kind
    /// and tenant only.
    @discardableResult
    func round() async throws -> Int {
        try await self.client.transaction(logger: self.logger) { connection in
            // Per schema: deployments (and tests) sharing a database do not wait for each other.
            let lock = try await connection.query(
                "SELECT pg_try_advisory_xact_lock(hashtext('approvals outbox'), hashtext(current_schema()))",
                logger: self.logger
            )
            var locked = false
            for try await value in lock.decode(Bool.self) { locked = value }
            guard locked else { return 0 }
            let rows = try await connection.query(
                "SELECT id, tenant_id, kind, payload FROM outbox WHERE attempts < \(Self.dead) ORDER BY id LIMIT \(Self.batch)",
                logger: self.logger
            )
            var items: [(id: Int64, tenant: String, kind: String, payload: ByteBuffer)] = []
            for try await (id, tenant, kind, payload) in rows.decode((Int64, String, String, ByteBuffer).self) {
                items.append((id, tenant, kind, payload))
            }
            // What agents wait for first.
            let outcome = GateMessages.Item.Kind.outcome.rawValue
            items = items.filter { $0.kind == outcome } + items.filter { $0.kind != outcome }
            var sent: [Int64] = []
            var failed: [Int64] = []
            var dead: [Int64] = []
            var blocked: Set<String> = []
            var index = 0
            while index < items.count {
                let item = items[index]
                let lane = item.kind + "\u{0}" + item.tenant
                if blocked.contains(lane) {
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
                } catch let refusal as ServiceEventRefusal where !refusal.retryable && group.count > 1 {
                    // One bad event must not take the others with it: each goes alone, once.
                    for row in group {
                        do {
                            try await self.send(kind: row.kind, tenant: row.tenant, payloads: [Array(buffer: row.payload)])
                            sent.append(row.id)
                        } catch let refusal as ServiceEventRefusal where !refusal.retryable {
                            dead.append(row.id)
                            self.logger.error(
                                "outbox item refused for good; kept, not sent again",
                                metadata: ["id": "\(row.id)", "error": "\(refusal)"]
                            )
                        } catch {
                            failed.append(row.id)
                            blocked.insert(lane)
                        }
                    }
                } catch let refusal as ServiceEventRefusal where !refusal.retryable {
                    dead += group.map(\.id)
                    self.logger.error(
                        "outbox item refused for good; kept, not sent again",
                        metadata: ["ids": "\(group.map(\.id))", "error": "\(refusal)"]
                    )
                } catch {
                    blocked.insert(lane)
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
            if !dead.isEmpty {
                try await connection.query("UPDATE outbox SET attempts = \(Self.dead) WHERE id = ANY(\(dead))", logger: self.logger)
            }
            return sent.count
        }
    }

    private func send(kind: String, tenant: String, payloads: [[UInt8]]) async throws {
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

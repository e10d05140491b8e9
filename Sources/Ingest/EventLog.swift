import Contracts
import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// What became of one submitted event.
enum ItemOutcome: Sendable, Equatable {
    case accepted(seq: Int64)
    case duplicate(seq: Int64)
    case rejected(reason: String)
}

/// An event with its seq, committed.
struct CommittedEvent: Sendable {
    var seq: Int64
    var event: PreparedEvent
    var frame: [UInt8]
}

/// The event log in Postgres: appends one group of events for one tenant in one transaction.
struct EventLog: Sendable {
    let client: PostgresClient
    let logger: Logger

    /// Appends `events` (already de-duplicated within the group by the caller) for `tenant`.
    ///
    /// Locks the tenant's row (`FOR UPDATE`), so appends of one tenant are serialized and
    /// commit order is seq order; drops events whose `msg_id` is already in the log; gives the
    /// others contiguous seqs from the tenant's counter; inserts them with one statement.
    /// Returns, per event, its new seq or the seq it already had.
    func append(tenant: String, events: [PreparedEvent], committedAt: Date) async throws -> (outcomes: [ItemOutcome], committed: [CommittedEvent]) {
        try await self.client.withTransaction(logger: self.logger) { connection in
            let locked = try await connection.query(
                "SELECT next_seq FROM tenants WHERE tenant_id = \(tenant) FOR UPDATE",
                logger: self.logger
            )
            var nextSeq: Int64?
            for try await value in locked.decode(Int64.self) { nextSeq = value }
            guard var seq = nextSeq else {
                // Keys reference tenants, so only a tenant deleted under a cached key gets here.
                throw ServiceKitError(.api(.authInvalid), "the ingest key's tenant no longer exists")
            }

            let msgIDs = events.map(\.msgID)
            var existing: [String: Int64] = [:]
            let found = try await connection.query(
                "SELECT msg_id, seq FROM events WHERE tenant_id = \(tenant) AND msg_id = ANY(\(msgIDs))",
                logger: self.logger
            )
            for try await (msgID, foundSeq) in found.decode((String, Int64).self) { existing[msgID] = foundSeq }

            var outcomes: [ItemOutcome] = []
            outcomes.reserveCapacity(events.count)
            var committed: [CommittedEvent] = []
            committed.reserveCapacity(events.count)
            for event in events {
                if let old = existing[event.msgID] {
                    outcomes.append(.duplicate(seq: old))
                    continue
                }
                committed.append(CommittedEvent(seq: seq, event: event, frame: event.frame(seq: seq)))
                outcomes.append(.accepted(seq: seq))
                seq += 1
            }
            guard !committed.isEmpty else { return (outcomes, committed) }

            let committedMilliseconds = Int64(committedAt.timeIntervalSince1970 * 1000)
            try await connection.query(
                """
                INSERT INTO events (tenant_id, seq, msg_id, swarm_id, agent_id, kind, severity, occurred_at, committed_at, frame)
                SELECT \(tenant), u.seq, u.msg_id, u.swarm_id, u.agent_id, u.kind, u.severity,
                       to_timestamp(u.occurred_ms / 1000.0), to_timestamp(\(committedMilliseconds) / 1000.0), u.frame
                FROM unnest(\(committed.map(\.seq)), \(committed.map(\.event.msgID)), \(committed.map(\.event.swarmID)),
                            \(committed.map(\.event.agentID)), \(committed.map { Int16($0.event.kind.rawValue) }),
                            \(committed.map { Int16($0.event.severity.rawValue) }), \(committed.map(\.event.occurredAtMilliseconds)),
                            \(committed.map { ByteBuffer(bytes: $0.frame) }))
                     AS u(seq, msg_id, swarm_id, agent_id, kind, severity, occurred_ms, frame)
                """,
                logger: self.logger
            )
            try await connection.query("UPDATE tenants SET next_seq = \(seq) WHERE tenant_id = \(tenant)", logger: self.logger)
            return (outcomes, committed)
        }
    }
}


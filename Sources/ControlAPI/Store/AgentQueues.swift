import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// The agents' command queues (``AgentQueue``) in Postgres, shared by every replica:
/// `agent_queues` holds each agent's floor, `agent_deliveries` the commands delivered above it.
/// A queue exists while its agent has an open session; claims on a delivery are conditional
/// writes, so two replicas polling one agent never hand out the same command at once.
///
/// A queue records which stream it walks (`stream_epoch`, the control stream's creation time):
/// a stream deleted and made again restarts its sequences, and a queue found over another one
/// starts again at its beginning instead of skipping the new stream's first commands.
struct AgentQueues: Sendable {
    let client: PostgresClient
    /// How long a delivered command may go unacknowledged before it is delivered again.
    let ackWait: Duration
    let logger: Logger

    /// The seconds of ``ackWait``, written into the statements.
    private var ackWaitSeconds: Double { Double(self.ackWait.components.seconds) }

    /// Makes the agent's queue, or keeps the one it has (starting it again if it was over another
    /// stream).
    func open(tenant: String, swarm: String, agent: String, epoch: String) async throws {
        try await self.client.transaction(logger: self.logger) { connection in
            let reset = try await connection.query(
                """
                INSERT INTO agent_queues (tenant_id, swarm_id, agent_id, stream_epoch) VALUES (\(tenant), \(swarm), \(agent), \(epoch))
                ON CONFLICT (tenant_id, swarm_id, agent_id) DO UPDATE SET stream_epoch = EXCLUDED.stream_epoch, floor = 0
                WHERE agent_queues.stream_epoch <> EXCLUDED.stream_epoch
                RETURNING 1
                """,
                logger: self.logger
            ).collect()
            if !reset.isEmpty {
                try await connection.query(
                    "DELETE FROM agent_deliveries WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent)",
                    logger: self.logger
                )
            }
        }
    }

    /// The agent's queue as it stands, made first if it has none (another replica opened the
    /// session before this one ran, or the stream was made again).
    func load(tenant: String, swarm: String, agent: String, epoch: String) async throws -> AgentQueue {
        let rows = try await self.client.query(
            """
            SELECT q.floor, q.stream_epoch, d.seq, d.done,
                EXTRACT(EPOCH FROM d.delivered_at + make_interval(secs => \(self.ackWaitSeconds)) - now())::float8
            FROM agent_queues q
            LEFT JOIN agent_deliveries d
                ON d.tenant_id = q.tenant_id AND d.swarm_id = q.swarm_id AND d.agent_id = q.agent_id AND d.seq > q.floor
            WHERE q.tenant_id = \(tenant) AND q.swarm_id = \(swarm) AND q.agent_id = \(agent)
            """,
            logger: self.logger
        )
        var queue: AgentQueue?
        var sameStream = true
        for try await (floor, streamEpoch, sequence, done, dueIn) in rows.decode((Int64, String, Int64?, Bool?, Double?).self) {
            if queue == nil { queue = AgentQueue(floor: UInt64(max(0, floor))) }
            sameStream = streamEpoch == epoch
            if let sequence, let done, let dueIn {
                queue?.deliveries[UInt64(sequence)] = .init(done: done, dueIn: .milliseconds(Int64((dueIn * 1000).rounded(.up))))
            }
        }
        if let queue, sameStream { return queue }
        try await self.open(tenant: tenant, swarm: swarm, agent: agent, epoch: epoch)
        return AgentQueue()
    }

    /// Claims the command at `sequence` for delivery now: true when this call won it (it was new,
    /// or in flight past its acknowledgement wait), false when it is done, in flight elsewhere,
    /// below the floor, or the queue is gone or over another stream.
    func claim(tenant: String, swarm: String, agent: String, epoch: String, sequence: UInt64) async throws -> Bool {
        let claimed = try await self.client.write(
            """
            INSERT INTO agent_deliveries (tenant_id, swarm_id, agent_id, seq, delivered_at, deliveries)
            SELECT tenant_id, swarm_id, agent_id, \(Int64(sequence)), now(), 1 FROM agent_queues
            WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent)
                AND floor < \(Int64(sequence)) AND stream_epoch = \(epoch)
            ON CONFLICT (tenant_id, swarm_id, agent_id, seq) DO UPDATE
            SET delivered_at = now(), deliveries = agent_deliveries.deliveries + 1
            WHERE NOT agent_deliveries.done
                AND agent_deliveries.delivered_at <= now() - make_interval(secs => \(self.ackWaitSeconds))
            RETURNING 1
            """,
            logger: self.logger
        )
        return !claimed.isEmpty
    }

    /// Hands a claimed command back undelivered: due again at once (the poll it was claimed for
    /// ended first).
    func release(tenant: String, swarm: String, agent: String, sequence: UInt64) async throws {
        try await self.client.write(
            """
            UPDATE agent_deliveries SET delivered_at = 'epoch'
            WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent) AND seq = \(Int64(sequence)) AND NOT done
            """,
            logger: self.logger
        )
    }

    /// Marks delivered commands done (acknowledged, discarded, or gone from the stream) and moves
    /// the floor up over the done ones at the bottom (``AgentQueue/complete(_:)``), one agent's
    /// completions at a time. A sequence with no delivery, or a queue that is gone, changes
    /// nothing.
    func complete(tenant: String, swarm: String, agent: String, _ sequences: [UInt64]) async throws {
        guard !sequences.isEmpty else { return }
        try await self.client.transaction(logger: self.logger) { connection in
            var queue: AgentQueue?
            for try await floor in try await connection.query(
                """
                SELECT floor FROM agent_queues WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent) FOR UPDATE
                """,
                logger: self.logger
            ).decode(Int64.self) {
                queue = AgentQueue(floor: UInt64(max(0, floor)))
            }
            guard var queue else { return }
            let before = queue.floor
            for try await (sequence, done) in try await connection.query(
                """
                SELECT seq, done FROM agent_deliveries
                WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent) AND seq > \(Int64(before))
                """,
                logger: self.logger
            ).decode((Int64, Bool).self) {
                queue.deliveries[UInt64(sequence)] = .init(done: done, dueIn: .zero)
            }
            let marked = sequences.filter { queue.deliveries[$0] != nil }.map { Int64($0) }
            guard !marked.isEmpty else { return }
            try await connection.query(
                """
                UPDATE agent_deliveries SET done = true
                WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent) AND seq = ANY(\(marked)::int8[])
                """,
                logger: self.logger
            )
            let floor = queue.complete(sequences)
            guard floor > before else { return }
            try await connection.query(
                "UPDATE agent_queues SET floor = \(Int64(floor)) WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent)",
                logger: self.logger
            )
            try await connection.query(
                """
                DELETE FROM agent_deliveries
                WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent) AND seq <= \(Int64(floor))
                """,
                logger: self.logger
            )
        }
    }

    /// Deletes the agent's queue and its deliveries (its last session ended).
    func remove(tenant: String, swarm: String, agent: String) async throws {
        try await self.client.write(
            "DELETE FROM agent_queues WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent)",
            logger: self.logger
        )
    }
}

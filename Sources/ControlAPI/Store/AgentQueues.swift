import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// The agents' command queues (``AgentQueue``) in Postgres, shared by every replica:
/// `agent_queues` holds each agent's floor, `agent_deliveries` the commands delivered above it.
/// A queue is made when its agent's first session opens and released when its last ends; kept a
/// day after (``forgetReleased(tenant:maxReleased:)``), so a connector that starts again goes on
/// from the floor instead of getting acknowledged commands again. Claims on a delivery are
/// conditional writes, so two replicas polling one agent never hand out the same command at once.
///
/// A queue records which stream it walks (`stream_epoch`, the control stream's creation time):
/// a stream deleted and made again restarts its sequences, and a queue found over another one
/// starts again at its beginning (``reset(tenant:swarm:agent:from:to:)``) instead of skipping the
/// new stream's first commands.
struct AgentQueues: Sendable {
    let client: PostgresClient
    /// How long a delivered command may go unacknowledged before it is delivered again.
    let ackWait: Duration
    let logger: Logger

    /// The seconds of ``ackWait``, written into the statements.
    private var ackWaitSeconds: Double { Double(self.ackWait.components.seconds) }

    /// What ``load(tenant:swarm:agent:epoch:)`` finds.
    enum Found: Sendable {
        case queue(AgentQueue)
        /// The agent has no queue in use (none, or released: its sessions ended).
        case missing
        /// The queue walks another stream (its epoch): the stream was made again, or this
        /// replica's idea of it is stale.
        case otherStream(String)
    }

    /// Makes the agent's queue if it has none, or takes up the one its last session left (from
    /// its floor), while it has an open session (a poll racing its session's end makes none).
    /// With `newSession` (the session just opened), the commands in flight are due again at
    /// once: only the open session acknowledges, and none of them was delivered to it. False
    /// when there is no open session.
    func make(tenant: String, swarm: String, agent: String, epoch: String, newSession: Bool) async throws -> Bool {
        try await self.client.transaction(logger: self.logger) { connection in
            var open = false
            for try await value in try await connection.query(
                """
                SELECT EXISTS (
                    SELECT 1 FROM agent_sessions
                    WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent) AND ended_at IS NULL)
                """,
                logger: self.logger
            ).decode(Bool.self) {
                open = value
            }
            guard open else { return false }
            try await connection.query(
                """
                INSERT INTO agent_queues (tenant_id, swarm_id, agent_id, stream_epoch) VALUES (\(tenant), \(swarm), \(agent), \(epoch))
                ON CONFLICT (tenant_id, swarm_id, agent_id) DO UPDATE SET released_at = NULL
                WHERE agent_queues.released_at IS NOT NULL
                """,
                logger: self.logger
            )
            if newSession {
                try await connection.query(
                    """
                    UPDATE agent_deliveries SET delivered_at = 'epoch'
                    WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent) AND NOT done
                    """,
                    logger: self.logger
                )
            }
            return true
        }
    }

    /// Starts the agent's queue again at the beginning of the stream `epoch` names, if it still
    /// walks the stream `old` (two replicas noticing one new stream reset it once).
    func reset(tenant: String, swarm: String, agent: String, from old: String, to epoch: String) async throws {
        try await self.client.transaction(logger: self.logger) { connection in
            let reset = try await connection.query(
                """
                UPDATE agent_queues SET stream_epoch = \(epoch), floor = 0
                WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent) AND stream_epoch = \(old)
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

    /// The agent's queue as it stands.
    func load(tenant: String, swarm: String, agent: String, epoch: String) async throws -> Found {
        let rows = try await self.client.query(
            """
            SELECT q.floor, q.stream_epoch, d.seq, d.done,
                EXTRACT(EPOCH FROM d.delivered_at + make_interval(secs => \(self.ackWaitSeconds)) - now())::float8
            FROM agent_queues q
            LEFT JOIN agent_deliveries d
                ON d.tenant_id = q.tenant_id AND d.swarm_id = q.swarm_id AND d.agent_id = q.agent_id AND d.seq > q.floor
            WHERE q.tenant_id = \(tenant) AND q.swarm_id = \(swarm) AND q.agent_id = \(agent) AND q.released_at IS NULL
            """,
            logger: self.logger
        )
        var queue: AgentQueue?
        var walked = epoch
        for try await (floor, streamEpoch, sequence, done, dueIn) in rows.decode((Int64, String, Int64?, Bool?, Double?).self) {
            if queue == nil { queue = AgentQueue(floor: UInt64(max(0, floor))) }
            walked = streamEpoch
            if let sequence, let done, let dueIn {
                queue?.deliveries[UInt64(sequence)] = .init(done: done, dueIn: .milliseconds(Int64((dueIn * 1000).rounded(.up))))
            }
        }
        guard let queue else { return .missing }
        return walked == epoch ? .queue(queue) : .otherStream(walked)
    }

    /// Releases the agent's queue once its last session has ended (none is open when the queue
    /// is locked: a session opening meanwhile on another replica either comes first and keeps it,
    /// or comes after and takes it up again). Kept ``keptReleased`` (the stream's age: every
    /// command at or below its floor is gone by then), so the agent's next session goes on from
    /// where this one left.
    func release(tenant: String, swarm: String, agent: String) async throws {
        try await self.client.transaction(logger: self.logger) { connection in
            var held = false
            for try await _ in try await connection.query(
                """
                SELECT 1 FROM agent_queues
                WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent) AND released_at IS NULL
                FOR UPDATE
                """,
                logger: self.logger
            ).decode(Int.self) {
                held = true
            }
            guard held else { return }
            try await connection.query(
                """
                UPDATE agent_queues SET released_at = now()
                WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent)
                    AND NOT EXISTS (
                        SELECT 1 FROM agent_sessions
                        WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent) AND ended_at IS NULL)
                """,
                logger: self.logger
            )
        }
    }

    /// How long a released queue is kept: the control stream's age.
    static let keptReleased = Duration.seconds(86_400)

    /// Deletes `tenant`'s released queues kept their day, and past the newest `maxReleased` of
    /// them the older ones (their agents' next sessions start from the stream's beginning, as
    /// every new session did before queues were kept), a thousand at a time; marks released any
    /// queue left without an open session (a release that failed). Rows another replica holds
    /// are skipped; a failure is logged, never the caller's.
    func forgetReleased(tenant: String, maxReleased: Int) async {
        do {
            try await self.client.write(
                """
                UPDATE agent_queues SET released_at = now()
                WHERE (tenant_id, swarm_id, agent_id) IN (
                    SELECT q.tenant_id, q.swarm_id, q.agent_id FROM agent_queues q
                    WHERE q.tenant_id = \(tenant) AND q.released_at IS NULL AND NOT EXISTS (
                        SELECT 1 FROM agent_sessions s
                        WHERE s.tenant_id = q.tenant_id AND s.swarm_id = q.swarm_id AND s.agent_id = q.agent_id AND s.ended_at IS NULL)
                    LIMIT 1000 FOR UPDATE SKIP LOCKED)
                """,
                logger: self.logger
            )
            try await self.client.write(
                """
                DELETE FROM agent_queues
                WHERE (tenant_id, swarm_id, agent_id) IN (
                    SELECT q.tenant_id, q.swarm_id, q.agent_id FROM agent_queues q
                    WHERE q.tenant_id = \(tenant) AND q.released_at IS NOT NULL AND (
                        q.released_at < now() - make_interval(secs => \(Double(Self.keptReleased.components.seconds)))
                        OR (q.swarm_id, q.agent_id) IN (
                            SELECT n.swarm_id, n.agent_id FROM agent_queues n
                            WHERE n.tenant_id = \(tenant) AND n.released_at IS NOT NULL
                            ORDER BY n.released_at DESC, n.swarm_id, n.agent_id OFFSET \(maxReleased)))
                    LIMIT 1000 FOR UPDATE SKIP LOCKED)
                """,
                logger: self.logger
            )
        } catch {
            self.logger.warning("released agent queues not forgotten", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// Whether `session` of `tenant` is open.
    func isOpen(tenant: String, session: String) async throws -> Bool {
        let rows = try await self.client.query(
            "SELECT 1 FROM agent_sessions WHERE tenant_id = \(tenant) AND session_id = \(session) AND ended_at IS NULL",
            logger: self.logger
        )
        for try await _ in rows.decode(Int.self) { return true }
        return false
    }

    /// Claims the command at `sequence` for delivery now to `session`: true when this call won it
    /// (it was new, or in flight past its acknowledgement wait), false when it is done, in flight
    /// elsewhere, below the floor, the queue is released or over another stream, or the session
    /// has ended (a poll its connector left behind takes nothing from the next session's).
    func claim(tenant: String, swarm: String, agent: String, session: String, epoch: String, sequence: UInt64) async throws -> Bool {
        let claimed = try await self.client.write(
            """
            INSERT INTO agent_deliveries (tenant_id, swarm_id, agent_id, seq, delivered_at, deliveries)
            SELECT tenant_id, swarm_id, agent_id, \(Int64(sequence)), now(), 1 FROM agent_queues
            WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent)
                AND floor < \(Int64(sequence)) AND stream_epoch = \(epoch) AND released_at IS NULL
                AND EXISTS (SELECT 1 FROM agent_sessions WHERE tenant_id = \(tenant) AND session_id = \(session) AND ended_at IS NULL)
            -- Waits for a completion moving the floor (it holds the row FOR UPDATE) and checks
            -- the floor it left: a command done and dropped below it is never claimed again.
            FOR SHARE
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
}

import Contracts
public import Foundation
public import Logging
public import PostgresNIO
import ServiceKit

/// What became of one submitted event.
public enum ItemOutcome: Sendable, Equatable {
    case accepted(seq: Int64)
    case duplicate(seq: Int64)
    case rejected(reason: String)
}

/// An event with its seq, committed.
public struct CommittedEvent: Sendable {
    public var seq: Int64
    /// The per-thread seq of an ACP envelope; 0 otherwise.
    public var threadSeq: Int64 = 0
    public var event: PreparedEvent

    public init(seq: Int64, threadSeq: Int64 = 0, event: PreparedEvent) {
        self.seq = seq
        self.threadSeq = threadSeq
        self.event = event
    }

    /// The client frame (``EventFrame``), rendered on each call: whoever publishes the event
    /// renders it, off the commit path.
    public var frame: [UInt8] { self.event.frame(seq: self.seq, threadSeq: self.threadSeq) }

    /// ``frame`` rendered straight into `Data` (a bus envelope's field).
    public var frameData: Data {
        var data = Data(capacity: self.frameCount)
        self.event.writeFrame(seq: self.seq, threadSeq: self.threadSeq, to: &data)
        return data
    }

    /// The frame's length in bytes, without rendering it.
    public var frameCount: Int { self.event.frameCount(seq: self.seq, threadSeq: self.threadSeq) }
}

/// One tenant's group of events made ready to append (``EventLogAppender/prepare(tenant:events:)``):
/// for a group without an ACP envelope, its statement's arguments are encoded, so a writer can
/// make the next group ready while the one before it commits. The commit time is bound when
/// the append starts.
public struct EventLogAppend: Sendable {
    public let tenant: String
    /// Already de-duplicated within the group.
    public let events: [PreparedEvent]
    /// `append_events`'s arguments but the commit time ($1 to $9), for a group without an ACP
    /// envelope.
    let arguments: PostgresBindings?
}

/// The event log in Postgres, as ingest writes it: appends one group of events for one tenant
/// in one transaction. Its client's sessions must have ingest's schema first on the
/// `search_path` (ingest's pool does).
public struct EventLogAppender: Sendable {
    let client: PostgresClient
    let logger: Logger
    /// How far back a `msg_id` is found: one committed earlier is stored again.
    let dedupWindowMilliseconds: Int64

    /// An appender whose de-duplication reaches `dedupWindow` back from each commit (and no
    /// further than the log's retention, which drops whole days).
    public init(client: PostgresClient, dedupWindow: Duration = .seconds(86_400), logger: Logger) {
        self.client = client
        self.logger = logger
        self.dedupWindowMilliseconds = dedupWindow.components.seconds * 1000 + dedupWindow.components.attoseconds / 1_000_000_000_000_000
    }

    /// Appends `events` (already de-duplicated within the group by the caller) for `tenant`.
    ///
    /// Locks the tenant's row (`FOR UPDATE`), so appends of one tenant are serialized and
    /// commit order is seq order; drops events whose `msg_id` was committed within the
    /// de-duplication window; gives the others contiguous seqs from the tenant's counter;
    /// inserts them. Returns, per event, its new seq or the seq it already had, once they are
    /// committed. Without an ACP envelope among them, all of that is one statement
    /// (`append_events`) between BEGIN and COMMIT; with one, a transaction that also advances
    /// the envelopes' threads.
    public func append(
        tenant: String,
        events: [PreparedEvent],
        committedAt: Date
    ) async throws -> (outcomes: [ItemOutcome], committed: [CommittedEvent]) {
        try await self.append(self.prepare(tenant: tenant, events: events), committedAt: committedAt)
    }

    /// `events` (already de-duplicated within the group by the caller) made ready to append
    /// for `tenant`: CPU only, no I/O.
    public func prepare(tenant: String, events: [PreparedEvent]) -> EventLogAppend {
        guard !events.contains(where: { $0.acp != nil }) else {
            return EventLogAppend(tenant: tenant, events: events, arguments: nil)
        }
        var arguments = PostgresBindings(capacity: 16)
        arguments.append(tenant)
        arguments.append(self.dedupWindowMilliseconds)
        arguments.append(events.map(\.msgID))
        arguments.append(events.map(\.swarmID))
        arguments.append(events.map(\.agentID))
        arguments.append(events.map { Int16($0.kind.rawValue) })
        arguments.append(events.map { Int16($0.severity.rawValue) })
        arguments.append(events.map(\.occurredAtMilliseconds))
        arguments.append(events.map { ByteBuffer(bytes: $0.frameTail) })
        let states = FleetNote.States(events)
        arguments.append(states.ordinals)
        arguments.append(states.states)
        arguments.append(states.summaries)
        arguments.append(states.workers)
        arguments.append(states.tmuxSessions)
        arguments.append(states.hosts)
        return EventLogAppend(tenant: tenant, events: events, arguments: arguments)
    }

    /// The longest task summary the fleet keeps, in characters.
    public static let maxTaskSummary = 500
    /// The longest state the fleet keeps, in characters.
    public static let maxFleetState = 128

    /// Appends a group made ready by ``prepare(tenant:events:)``, committed at `committedAt`:
    /// as ``append(tenant:events:committedAt:)`` does.
    public func append(_ append: EventLogAppend, committedAt: Date) async throws -> (outcomes: [ItemOutcome], committed: [CommittedEvent]) {
        if var arguments = append.arguments {
            arguments.append(self.committedMilliseconds(committedAt))
            let statement = PostgresQuery(
                unsafeSQL: "SELECT seqs, duplicates FROM append_events($1, $16, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
                binds: arguments
            )
            return try await self.appendInOneStatement(statement, events: append.events)
        }
        let tenant = append.tenant
        let events = append.events
        return try await self.client.transaction(logger: self.logger) { connection in
            let locked = try await connection.query(
                "SELECT next_seq FROM tenants WHERE tenant_id = \(tenant) FOR UPDATE",
                logger: self.logger
            )
            var nextSeq: Int64?
            for try await value in locked.decode(Int64.self) { nextSeq = value }
            guard var seq = nextSeq else {
                // Keys reference tenants, so only a tenant deleted under a cached key gets here.
                throw APIError(.authInvalid, "the ingest key's tenant no longer exists")
            }

            let msgIDs = events.map(\.msgID)
            var existing: [String: Int64] = [:]
            let found = try await connection.query(
                """
                SELECT msg_id, seq FROM events WHERE tenant_id = \(tenant) AND msg_id = ANY(\(msgIDs))
                    AND committed_at >= to_timestamp(\(self.committedMilliseconds(committedAt) - self.dedupWindowMilliseconds) / 1000.0)
                ORDER BY seq
                """,
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
                committed.append(CommittedEvent(seq: seq, event: event))
                outcomes.append(.accepted(seq: seq))
                seq += 1
            }
            guard !committed.isEmpty else { return (outcomes, committed) }
            if committed.contains(where: { $0.event.acp != nil }) {
                try await self.assignThreadSeqs(tenant: tenant, to: &committed, connection: connection)
            }
            let committedMilliseconds = self.committedMilliseconds(committedAt)
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
            let fleet = FleetNote.Agents(committed)
            if !fleet.agents.isEmpty {
                try await connection.perform(
                    """
                    SELECT fleet_note(\(tenant), to_timestamp(\(committedMilliseconds) / 1000.0), \(fleet.agents), \(fleet.swarms),
                        \(fleet.lastSeqs), \(fleet.events), \(fleet.errors), \(fleet.stateSeqs), \(fleet.states), \(fleet.summaries),
                        \(fleet.workers), \(fleet.tmuxSessions), \(fleet.hosts))
                    """,
                    logger: self.logger
                )
            }
            let envelopes = committed.filter { $0.event.acp != nil }
            if !envelopes.isEmpty {
                try await self.insertEnvelopes(tenant: tenant, envelopes, committedMilliseconds: committedMilliseconds, connection: connection)
            }
            return (outcomes, committed)
        }
    }

    private func committedMilliseconds(_ date: Date) -> Int64 {
        Int64(date.timeIntervalSince1970 * 1000)
    }

    /// ``append(_:committedAt:)`` for events none of which is an ACP envelope: `append_events`
    /// (migration 7, noting the fleet since migration 12) does it in one statement, `statement`.
    private func appendInOneStatement(
        _ statement: PostgresQuery,
        events: [PreparedEvent]
    ) async throws -> (outcomes: [ItemOutcome], committed: [CommittedEvent]) {
        // In an explicit transaction, answered once COMMIT has completed. Alone, the statement
        // would run in the extended protocol's implicit transaction, which Postgres commits at
        // the Sync after buffering the statement's rows and CommandComplete; a backend
        // terminated just then flushes them with its FATAL error and rolls back, and
        // postgres-nio ends the rows at CommandComplete: the append was lost after its events
        // were acknowledged (IngestPipelineTests' killed connections, 1 run in 10).
        let (seqs, duplicates) = try await self.client.transaction(logger: self.logger) { connection in
            var answer: (seqs: [Int64], duplicates: [Bool]) = ([], [])
            do {
                let rows = try await connection.query(statement, logger: self.logger)
                for try await row in rows.decode(([Int64], [Bool]).self) { answer = row }
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "P0002" {
                // Keys reference tenants, so only a tenant deleted under a cached key gets here.
                throw APIError(.authInvalid, "the ingest key's tenant no longer exists")
            }
            return answer
        }
        guard seqs.count == events.count, duplicates.count == events.count else {
            throw APIError(.serverError, "the event log answered \(seqs.count) outcomes for \(events.count) events")
        }
        var outcomes: [ItemOutcome] = []
        outcomes.reserveCapacity(events.count)
        var committed: [CommittedEvent] = []
        committed.reserveCapacity(events.count)
        for (index, event) in events.enumerated() {
            let seq = seqs[index]
            if duplicates[index] {
                outcomes.append(.duplicate(seq: seq))
            } else {
                outcomes.append(.accepted(seq: seq))
                committed.append(CommittedEvent(seq: seq, event: event))
            }
        }
        return (outcomes, committed)
    }

    /// Locks the threads of the ACP envelopes in `committed` and gives each envelope the next
    /// seq of its thread, in order. The tenant's row lock is already held, so threads are never
    /// locked in two orders.
    private func assignThreadSeqs(tenant: String, to committed: inout [CommittedEvent], connection: PostgresConnection) async throws {
        // A new thread is its first envelope's agent's.
        var agents: [String: (swarm: String, agent: String)] = [:]
        for item in committed.reversed() {
            if let thread = item.event.acp?.threadID { agents[thread] = (item.event.swarmID, item.event.agentID) }
        }
        let threads = agents.keys.sorted()
        try await connection.query(
            """
            INSERT INTO acp_threads (tenant_id, thread_id, swarm_id, agent_id)
            SELECT \(tenant), u.thread_id, u.swarm_id, u.agent_id
            FROM unnest(\(threads), \(threads.map { agents[$0]!.swarm }), \(threads.map { agents[$0]!.agent })) AS u(thread_id, swarm_id, agent_id)
            ON CONFLICT DO NOTHING
            """,
            logger: self.logger
        )
        var next: [String: Int64] = [:]
        let rows = try await connection.query(
            "SELECT thread_id, next_seq FROM acp_threads WHERE tenant_id = \(tenant) AND thread_id = ANY(\(threads)) ORDER BY thread_id FOR UPDATE",
            logger: self.logger
        )
        for try await (thread, nextSeq) in rows.decode((String, Int64).self) { next[thread] = nextSeq }
        for index in committed.indices {
            guard let thread = committed[index].event.acp?.threadID, let threadSeq = next[thread] else { continue }
            committed[index].threadSeq = threadSeq
            next[thread] = threadSeq + 1
        }
        try await connection.query(
            """
            UPDATE acp_threads AS t SET next_seq = u.next_seq
            FROM unnest(\(Array(next.keys)), \(Array(next.values))) AS u(thread_id, next_seq)
            WHERE t.tenant_id = \(tenant) AND t.thread_id = u.thread_id
            """,
            logger: self.logger
        )
        // Titles, in commit order: the agent's replaces, a prompt's names a thread with none.
        var titles: [String: (text: String, replaces: Bool)] = [:]
        for item in committed {
            guard let acp = item.event.acp, let title = acp.title else { continue }
            if title.replaces || titles[acp.threadID] == nil { titles[acp.threadID] = (title.text, title.replaces) }
        }
        if !titles.isEmpty {
            let named = titles.keys.sorted()
            try await connection.query(
                """
                UPDATE acp_threads AS t SET title = CASE WHEN u.replaces THEN u.title ELSE coalesce(t.title, u.title) END
                FROM unnest(\(named), \(named.map { titles[$0]!.text }), \(named.map { titles[$0]!.replaces })) AS u(thread_id, title, replaces)
                WHERE t.tenant_id = \(tenant) AND t.thread_id = u.thread_id
                """,
                logger: self.logger
            )
        }
    }

    private func insertEnvelopes(
        tenant: String,
        _ envelopes: [CommittedEvent],
        committedMilliseconds: Int64,
        connection: PostgresConnection
    ) async throws {
        let parts = envelopes.map { $0.event.acp! }
        try await connection.query(
            """
            INSERT INTO acp_envelopes (tenant_id, thread_id, thread_seq, seq, session_id, direction, kind, msg_id, checksum, received_at, body, rpc_id)
            SELECT \(tenant), u.thread_id, u.thread_seq, u.seq, nullif(u.session_id, ''), u.direction, u.kind, u.msg_id, u.checksum,
                   to_timestamp(\(committedMilliseconds) / 1000.0), u.body, nullif(u.rpc_id, '')
            FROM unnest(\(parts.map(\.threadID)), \(envelopes.map(\.threadSeq)), \(envelopes.map(\.seq)), \(parts.map { $0.sessionID ?? "" }),
                        \(parts.map(\.direction.rawValue)), \(parts.map(\.kind.rawValue)), \(parts.map(\.msgID)),
                        \(parts.map { ByteBuffer(bytes: $0.checksum) }), \(parts.map { ByteBuffer(bytes: $0.body) }), \(parts.map { $0.rpcID ?? "" }))
                 AS u(thread_id, thread_seq, seq, session_id, direction, kind, msg_id, checksum, body, rpc_id)
            """,
            logger: self.logger
        )
    }
}

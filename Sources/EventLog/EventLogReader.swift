public import Contracts
import Foundation
public import Logging
public import NIOCore
public import PostgresNIO

/// The reads other services make of ingest's event log, read-only: the one cross-schema access
/// the architecture allows, and the only code outside ingest that knows its tables.
public struct EventLogReader: Sendable {
    let client: PostgresClient
    /// Ingest's schema, a plain identifier (checked by the reader's configuration).
    let schema: String
    let logger: Logger

    /// - Parameter schema: ingest's schema (`ingest` by default); names are qualified with it,
    ///   so the client's `search_path` does not matter.
    public init(client: PostgresClient, schema: String, logger: Logger) {
        self.client = client
        self.schema = schema
        self.logger = logger
    }

    // MARK: Tenants' logs

    /// The tenant's last committed seq; 0 when it has none.
    public func head(tenant: String) async throws -> Int64 {
        let rows = try await self.client.query(
            "SELECT next_seq - 1 FROM \(unescaped: self.schema).tenants WHERE tenant_id = \(tenant)",
            logger: self.logger
        )
        for try await head in rows.decode(Int64.self) { return head }
        return 0
    }

    /// The heads of `tenants` (those with no events are missing).
    public func heads(tenants: [String]) async throws -> [String: Int64] {
        let rows = try await self.client.query(
            "SELECT tenant_id, next_seq - 1 FROM \(unescaped: self.schema).tenants WHERE tenant_id = ANY(\(tenants))",
            logger: self.logger
        )
        var heads: [String: Int64] = [:]
        for try await (tenant, head) in rows.decode((String, Int64).self) { heads[tenant] = head }
        return heads
    }

    /// The tenant's oldest seq still in the log (older ones are past retention); nil when it
    /// has none.
    public func oldest(tenant: String) async throws -> Int64? {
        let rows = try await self.client.query(
            "SELECT min(seq) FROM \(unescaped: self.schema).events WHERE tenant_id = \(tenant)",
            logger: self.logger
        )
        for try await oldest in rows.decode(Int64?.self) { return oldest }
        return nil
    }

    /// The events with `after < seq <= through` that match every given condition (`nil`: any),
    /// in seq order, at most `limit`, and no more once their frames reach `maxBytes` (at least
    /// one). The conditions run in SQL; `renderedTools` keeps tool calls whose frame names one of them
    /// (matched byte for byte as rendered, as the live feed reads it: a frame is never parsed as
    /// JSON here). ACP envelopes carry their thread and per-thread seq.
    public func events(
        tenant: String,
        after: Int64,
        through: Int64,
        kinds: Set<BusEventKind>? = nil,
        minimumSeverity: BusSeverity? = nil,
        swarmIDs: Set<String>? = nil,
        agentIDs: Set<String>? = nil,
        renderedTools: Set<[UInt8]>? = nil,
        limit: Int,
        maxBytes: Int = .max
    ) async throws -> [LoggedEvent] {
        let kinds: [Int16]? = kinds.map { $0.map { Int16($0.rawValue) } }
        // Tool names as frames render them (`EventFrame.renderedStringTail`): matched byte for
        // byte after the first `,"tool":"`, as `EventFrame.renderedTool(in:)` reads it live.
        let tools: [ByteBuffer]? = renderedTools.map { $0.map { ByteBuffer(bytes: $0) } }
        let toolMarker = ByteBuffer(bytes: EventFrame.toolMarker)
        let toolCall = Int16(BusEventKind.toolCall.rawValue)
        let severity: Int16? = minimumSeverity.map { Int16($0.rawValue) }
        let swarms: [String]? = swarmIDs.map(Array.init)
        let agents: [String]? = agentIDs.map(Array.init)
        let rows = try await self.client.query(
            """
            SELECT seq, kind, severity, swarm_id, agent_id, frame FROM \(unescaped: self.schema).events
            WHERE tenant_id = \(tenant) AND seq > \(after) AND seq <= \(through)
              AND (\(kinds)::smallint[] IS NULL OR kind = ANY(\(kinds)::smallint[]))
              AND (\(severity)::smallint IS NULL OR severity >= \(severity)::smallint)
              AND (\(swarms)::text[] IS NULL OR swarm_id = ANY(\(swarms)::text[]))
              AND (\(agents)::text[] IS NULL OR agent_id = ANY(\(agents)::text[]))
              AND (\(tools)::bytea[] IS NULL
                   OR (kind = \(toolCall) AND position(\(toolMarker)::bytea IN frame) > 0
                       AND EXISTS (SELECT 1 FROM unnest(\(tools)::bytea[]) AS tool
                                   WHERE substring(frame FROM position(\(toolMarker)::bytea IN frame) + octet_length(\(toolMarker)::bytea)
                                                   FOR octet_length(tool)) = tool)))
            ORDER BY seq
            LIMIT \(limit)
            """,
            logger: self.logger
        )
        var events: [LoggedEvent] = []
        var envelopeIndex: [Int64: Int] = [:]
        var bytes = 0
        for try await row in rows {
            // Past the byte budget, the rest of the page is not read (the next page starts here).
            guard bytes < maxBytes else { break }
            // Column by column: decoding the row as a tuple looks up the tuple's metadata per
            // row, which cost a replay more than reading the rows.
            var cells = row.makeIterator()
            func next<Value: PostgresDecodable>(_: Value.Type) throws -> Value {
                guard let cell = cells.next() else { throw PostgresDecodingError.Code.missingData }
                return try cell.decode(Value.self)
            }
            let seq = try next(Int64.self)
            let kind = try next(Int16.self)
            let severity = try next(Int16.self)
            let swarm = try next(String.self)
            let agent = try next(String.self)
            let frame = try next(ByteBuffer.self)
            bytes += frame.readableBytes
            let event = LoggedEvent(seq: seq, storedKind: kind, storedSeverity: severity, swarmID: swarm, agentID: agent, frame: frame)
            if event.kind == .acp { envelopeIndex[seq] = events.count }
            events.append(event)
        }
        // ACP envelopes carry their thread (which the live feed has from the bus envelope).
        if !envelopeIndex.isEmpty {
            let threads = try await self.client.query(
                "SELECT seq, thread_id, thread_seq FROM \(unescaped: self.schema).acp_envelopes WHERE tenant_id = \(tenant) AND seq = ANY(\(Array(envelopeIndex.keys)))",
                logger: self.logger
            )
            for try await (seq, thread, threadSeq) in threads.decode((Int64, String, Int64).self) {
                guard let index = envelopeIndex[seq] else { continue }
                events[index].threadID = thread
                events[index].threadSeq = threadSeq
            }
        }
        return events
    }

    // MARK: ACP threads

    /// One stored ACP envelope: its per-thread seq and its bytes, exactly as stored.
    public struct Envelope: Sendable {
        public var threadSeq: Int64
        public var bytes: ByteBuffer
    }

    /// Envelopes of `thread` with `threadSeq >= from`, in order, at most `limit`, and no more
    /// once they reach `maxBytes` (at least one).
    public func envelopes(tenant: String, thread: String, from: Int64, limit: Int, maxBytes: Int = .max) async throws -> [Envelope] {
        let rows = try await self.client.query(
            """
            SELECT a.thread_seq, e.frame
            FROM \(unescaped: self.schema).acp_envelopes a
            JOIN \(unescaped: self.schema).events e
                ON e.tenant_id = a.tenant_id AND e.seq = a.seq AND e.committed_at = a.received_at  -- the same instant: prunes to one partition
            WHERE a.tenant_id = \(tenant) AND a.thread_id = \(thread) AND a.thread_seq >= \(from)
            ORDER BY a.thread_seq
            LIMIT \(limit)
            """,
            logger: self.logger
        )
        var envelopes: [Envelope] = []
        var total = 0
        for try await (threadSeq, frame) in rows.decode((Int64, ByteBuffer).self) {
            guard total < maxBytes else { break }
            if let bytes = EventFrame.envelope(in: frame) {
                total += bytes.readableBytes
                envelopes.append(Envelope(threadSeq: threadSeq, bytes: bytes))
            }
        }
        return envelopes
    }

    /// The thread's last seq; 0 when it has no envelope (or is another tenant's).
    public func threadHead(tenant: String, thread: String) async throws -> Int64 {
        let rows = try await self.client.query(
            "SELECT next_seq - 1 FROM \(unescaped: self.schema).acp_threads WHERE tenant_id = \(tenant) AND thread_id = \(thread)",
            logger: self.logger
        )
        for try await head in rows.decode(Int64.self) { return head }
        return 0
    }

    /// A thread of the tenant's list: its head, agent and title.
    public struct ThreadSummary: Sendable {
        public var thread: String
        public var head: Int64
        /// The agent of its first envelope (nil for threads older than that record).
        public var swarm: String?
        public var agent: String?
        /// What its messages named it (``ACPPart/ThreadTitle``), if anything.
        public var title: String?
    }

    /// The tenant's threads, by thread id, at most `limit`.
    public func threads(tenant: String, limit: Int) async throws -> [ThreadSummary] {
        let rows = try await self.client.query(
            """
            SELECT thread_id, next_seq - 1, swarm_id, agent_id, title FROM \(unescaped: self.schema).acp_threads
            WHERE tenant_id = \(tenant) ORDER BY thread_id LIMIT \(limit)
            """,
            logger: self.logger
        )
        var threads: [ThreadSummary] = []
        for try await (thread, head, swarm, agent, title) in rows.decode((String, Int64, String?, String?, String?).self) {
            threads.append(ThreadSummary(thread: thread, head: head, swarm: swarm, agent: agent, title: title))
        }
        return threads
    }

    /// The first seq the thread still holds (retention drops the oldest days); nil when it
    /// holds none.
    public func threadStart(tenant: String, thread: String) async throws -> Int64? {
        let rows = try await self.client.query(
            "SELECT min(thread_seq) FROM \(unescaped: self.schema).acp_envelopes WHERE tenant_id = \(tenant) AND thread_id = \(thread)",
            logger: self.logger
        )
        for try await start in rows.decode(Int64?.self) { return start }
        return nil
    }

    /// The agent a thread is: the one of its first envelope (nil when it has none, or is
    /// another tenant's).
    public func threadAgent(tenant: String, thread: String) async throws -> (swarm: String, agent: String)? {
        let rows = try await self.client.query(
            "SELECT swarm_id, agent_id FROM \(unescaped: self.schema).acp_threads WHERE tenant_id = \(tenant) AND thread_id = \(thread)",
            logger: self.logger
        )
        for try await (swarm, agent) in rows.decode((String?, String?).self) {
            if let swarm, let agent { return (swarm, agent) }
        }
        return nil
    }

    /// The agent's latest request in `thread` whose JSON-RPC id is `id` (JSON text): its body
    /// and per-thread seq; nil when there is none.
    public func agentRequest(tenant: String, thread: String, id: String) async throws -> (body: ByteBuffer, threadSeq: Int64)? {
        let rows = try await self.client.query(
            """
            SELECT body, thread_seq FROM \(unescaped: self.schema).acp_envelopes
            WHERE tenant_id = \(tenant) AND thread_id = \(thread) AND rpc_id = \(id)
                AND direction = \(ACPPart.Direction.agentToClient.rawValue) AND kind = \(ACPPart.Kind.request.rawValue)
            ORDER BY thread_seq DESC
            LIMIT 1
            """,
            logger: self.logger
        )
        for try await (body, threadSeq) in rows.decode((ByteBuffer, Int64).self) { return (body, threadSeq) }
        return nil
    }

    /// The seq of the last envelope the agent sent in the thread (of `kind`, when named); 0
    /// when it sent none.
    public func lastAgentSeq(tenant: String, thread: String, kind: ACPPart.Kind? = nil) async throws -> Int64 {
        let rows = try await self.client.query(
            """
            SELECT thread_seq FROM \(unescaped: self.schema).acp_envelopes
            WHERE tenant_id = \(tenant) AND thread_id = \(thread) AND direction = \(ACPPart.Direction.agentToClient.rawValue)
                AND (\(kind?.rawValue)::smallint IS NULL OR kind = \(kind?.rawValue))
            ORDER BY thread_seq DESC
            LIMIT 1
            """,
            logger: self.logger
        )
        for try await seq in rows.decode(Int64.self) { return seq }
        return 0
    }

    /// The per-thread seq of the ACP envelope that is the tenant's event `seq`; nil when it is none.
    public func threadSeq(tenant: String, seq: Int64) async throws -> Int64? {
        let rows = try await self.client.query(
            "SELECT thread_seq FROM \(unescaped: self.schema).acp_envelopes WHERE tenant_id = \(tenant) AND seq = \(seq)",
            logger: self.logger
        )
        for try await threadSeq in rows.decode(Int64.self) { return threadSeq }
        return nil
    }
}

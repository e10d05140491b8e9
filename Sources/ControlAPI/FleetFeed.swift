import Contracts
import Foundation
import Logging
import PostgresNIO
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Keeps ``FleetIndex`` current: subscribes to every tenant's live feed, loads the index from
/// one snapshot of the event log (events the feed delivered meanwhile are ignored by seq), then
/// applies each live event. Ready once loaded.
final class FleetFeed: Service, Sendable {
    let index: FleetIndex
    let client: PostgresClient
    let connection: NATSConnection
    let subjects: Subjects
    /// Ingest's schema, quoted for SQL.
    let eventLog: String
    let logger: Logger
    private let loaded = Mutex(false)

    init(index: FleetIndex, client: PostgresClient, connection: NATSConnection, subjects: Subjects, ingestSchema: String, logger: Logger) {
        self.index = index
        self.client = client
        self.connection = connection
        self.subjects = subjects
        self.eventLog = "\"\(ingestSchema)\""
        self.logger = logger
    }

    /// True once the index holds the log.
    var isLoaded: Bool { self.loaded.withLock { $0 } }

    func run() async throws {
        // Subscribed before the snapshot, so nothing falls between the two.
        let subscription = try self.connection.subscribe(to: self.subjects.allEvents, buffering: .dropNewest(maxMessages: 1_000_000))
        var attempt = 0
        while !self.isLoaded {
            do {
                try await self.load()
                self.loaded.withLock { $0 = true }
            } catch {
                attempt += 1
                self.logger.warning("cannot load the fleet from the event log; retrying", metadata: ["error": "\(String(reflecting: error))"])
                try await Task.sleep(for: .seconds(min(attempt, 5)))
            }
        }
        await withTaskCancellationOrGracefulShutdownHandler {
            for await message in subscription {
                guard let envelope = try? BusEventEnvelope(serializedBytes: message.payload) else { continue }
                self.apply(envelope)
            }
        } onCancelOrGracefulShutdown: {
            subscription.unsubscribe()
        }
    }

    private func apply(_ envelope: BusEventEnvelope) {
        var state: (String, String?, Bool)?
        if envelope.kind == .state, let frame = try? JSONDecoder().decode(StateFrame.self, from: Data(envelope.frame)), let value = frame.state {
            state = (value, frame.taskSummary, frame.attrs?.worker == true)
        }
        self.index.apply(
            tenant: envelope.tenantID,
            seq: envelope.seq,
            swarmID: envelope.swarmID,
            agentID: envelope.agentID,
            isError: envelope.severity.rawValue >= BusSeverity.error.rawValue,
            committedAt: Date(timeIntervalSince1970: TimeInterval(envelope.committedUnixNano) / 1e9),
            state: state
        )
    }

    private struct StateFrame: Decodable {
        struct Attributes: Decodable {
            enum CodingKeys: CodingKey { case worker }
            var worker: Bool?

            /// Lenient: attributes are the agent's; anything but a boolean is no flag.
            init(from decoder: any Decoder) throws {
                self.worker = try? decoder.container(keyedBy: CodingKeys.self).decode(Bool.self, forKey: .worker)
            }
        }

        var state: String?
        var taskSummary: String?
        var attrs: Attributes?
    }

    /// Reads heads, agents, their last states and last hour from one snapshot.
    private func load() async throws {
        let stateKind = Int16(BusEventKind.state.rawValue)
        let errorSeverity = Int16(BusSeverity.error.rawValue)
        let (heads, agents) = try await self.client.withConnection { connection in
            try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: self.logger)
            do {
                // Whole-log scans: the pool's statement timeout is for requests, not for this.
                try await connection.query("SET LOCAL statement_timeout = 0", logger: self.logger)
                var heads: [String: Int64] = [:]
                for try await (tenant, head) in try await connection.query(
                    "SELECT tenant_id, next_seq - 1 FROM \(unescaped: self.eventLog).tenants",
                    logger: self.logger
                ).decode((String, Int64).self) {
                    heads[tenant] = head
                }
                var records: [String: [String: FleetIndex.AgentRecord]] = [:]
                for try await (tenant, swarm, agent, lastSeen) in try await connection.query(
                    """
                    SELECT DISTINCT ON (tenant_id, agent_id) tenant_id, swarm_id, agent_id, committed_at
                    FROM \(unescaped: self.eventLog).events ORDER BY tenant_id, agent_id, seq DESC
                    """,
                    logger: self.logger
                ).decode((String, String, String, Date).self) {
                    records[tenant, default: [:]][agent] = FleetIndex.AgentRecord(
                        agentID: agent,
                        swarmID: swarm,
                        stateChangedAt: lastSeen,
                        lastSeenAt: lastSeen
                    )
                }
                for try await (tenant, agent, seq, frame, at) in try await connection.query(
                    """
                    SELECT DISTINCT ON (tenant_id, agent_id) tenant_id, agent_id, seq, frame, committed_at
                    FROM \(unescaped: self.eventLog).events WHERE kind = \(stateKind) ORDER BY tenant_id, agent_id, seq DESC
                    """,
                    logger: self.logger
                ).decode((String, String, Int64, ByteBuffer, Date).self) {
                    guard let parsed = try? JSONDecoder().decode(StateFrame.self, from: Data(buffer: frame)) else { continue }
                    records[tenant]?[agent]?.state = parsed.state
                    records[tenant]?[agent]?.stateSeq = seq
                    records[tenant]?[agent]?.acceptsRequests = parsed.attrs?.worker == true
                    records[tenant]?[agent]?.taskSummary = parsed.taskSummary
                    records[tenant]?[agent]?.stateChangedAt = at
                }
                for try await (tenant, agent, minute, events, errors) in try await connection.query(
                    """
                    SELECT tenant_id, agent_id, date_trunc('minute', committed_at), count(*), count(*) FILTER (WHERE severity >= \(errorSeverity))
                    FROM \(unescaped: self.eventLog).events WHERE committed_at > now() - interval '1 hour'
                    GROUP BY 1, 2, 3
                    """,
                    logger: self.logger
                ).decode((String, String, Date, Int64, Int64).self) {
                    records[tenant]?[agent]?.minutes.add(at: minute, events: events, errors: errors)
                }
                try await connection.query("COMMIT", logger: self.logger)
                return (heads, records.mapValues { Array($0.values) })
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: self.logger)
                throw error
            }
        }
        self.index.load(heads: heads, agents: agents)
        self.logger.info("fleet loaded from the event log", metadata: ["tenants": "\(heads.count)", "agents": "\(agents.values.map(\.count).reduce(0, +))"])
    }
}

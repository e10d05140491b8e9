import Contracts
import EventLog
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
    let eventLog: EventLogReader
    let connection: NATSConnection
    let subjects: Subjects
    let logger: Logger
    private let loaded = Mutex(false)

    init(index: FleetIndex, eventLog: EventLogReader, connection: NATSConnection, subjects: Subjects, logger: Logger) {
        self.index = index
        self.eventLog = eventLog
        self.connection = connection
        self.subjects = subjects
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
                guard let envelopes = try? BusEventBatch.envelopes(in: message.payload, subject: message.subject, subjects: self.subjects)
                else { continue }
                for envelope in envelopes { self.apply(envelope) }
            }
        } onCancelOrGracefulShutdown: {
            subscription.unsubscribe()
        }
    }

    private func apply(_ envelope: BusEventEnvelope) {
        var state: (String, String?, EventFrame.State.Attributes?)?
        if envelope.kind == .state, let frame = EventFrame.state(in: envelope.frame), let value = frame.state {
            state = (value, frame.taskSummary, frame.attrs)
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

    /// Loads the index from one snapshot of the log.
    private func load() async throws {
        let snapshot = try await self.eventLog.fleetSnapshot()
        var agents: [String: [FleetIndex.AgentRecord]] = [:]
        for agent in snapshot.agents {
            var record = FleetIndex.AgentRecord(
                agentID: agent.agentID,
                swarmID: agent.swarmID,
                stateChangedAt: agent.lastSeenAt,
                lastSeenAt: agent.lastSeenAt,
                lastSeq: agent.lastSeq
            )
            if let last = agent.lastState {
                record.state = last.fields.state
                record.stateSeq = last.seq
                record.acceptsRequests = last.fields.attrs?.worker == true
                record.tmuxSession = last.fields.attrs?.tmuxSession
                record.host = last.fields.attrs?.host
                record.taskSummary = last.fields.taskSummary
                record.stateChangedAt = last.committedAt
            }
            for minute in agent.minutes {
                record.minutes.add(at: minute.start, events: minute.events, errors: minute.errors)
            }
            agents[agent.tenant, default: []].append(record)
        }
        self.index.load(heads: snapshot.heads, agents: agents)
        self.logger.info("fleet loaded from the event log", metadata: ["tenants": "\(snapshot.heads.count)", "agents": "\(snapshot.agents.count)"])
    }
}

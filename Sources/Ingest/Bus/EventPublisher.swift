import Contracts
import EventLog
import Foundation
import Logging
import Metrics
import ServiceKit
import SwiftProtobuf

/// Publishes committed events on the live feed, as ``BusPublishPlan`` lays them out: runs of
/// events as one `BusEventBatch` on the tenant's batch subject, ACP messages (and every event
/// without batches) as one `BusEventEnvelope` on its event subject; each carries the frame
/// rendered at commit. For an ACP message, also its thread's advance (``ACPAdvanceNotice``)
/// for the notifier.
struct EventPublisher: Sendable {
    let connection: NATSConnection
    let subjects: Subjects
    /// Whether runs of events go as batches (`ingest.bus-batches`).
    let batches: Bool
    let logger: Logger
    private let failures = Counter(label: "ingest_publish_failures_total")
    private let published = Counter(label: "ingest_events_published_total")
    private let messages = Counter(label: "ingest_bus_messages_published_total")
    private let advanceFailures = Counter(label: "ingest_acp_advance_publish_failures_total")

    init(connection: NATSConnection, subjects: Subjects, batches: Bool, logger: Logger) {
        self.connection = connection
        self.subjects = subjects
        self.batches = batches
        self.logger = logger
    }

    /// Publishes in the order given (seq order). A failed publish is counted and logged, not
    /// thrown: the events are committed, and consumers back-fill a seq gap from the log.
    func publish(tenant: String, events: [CommittedEvent], committedAtNanoseconds: Int64) {
        let plan = BusPublishPlan(
            sizes: events.map { Self.envelopeSizeBound(of: $0, tenant: tenant) },
            // By kind as well: approvals subscribes to ACP messages by their subject's kind.
            isACP: events.map { $0.event.kind == .acp || $0.event.acp != nil },
            budget: self.connection.maxPayload,
            batches: self.batches
        )
        var failed = 0
        for part in plan.parts {
            switch part {
            case .batch(let range):
                var batch = BusEventBatch()
                batch.events = events[range].map { Self.envelope(of: $0, tenant: tenant, committedAtNanoseconds: committedAtNanoseconds) }
                do {
                    let bytes: [UInt8] = try batch.serializedBytes()
                    try self.connection.publish(bytes, to: self.subjects.eventBatch(tenant: tenant))
                    self.messages.increment()
                } catch {
                    failed += range.count
                }
            case .single(let index):
                if !self.publishAlone(events[index], tenant: tenant, committedAtNanoseconds: committedAtNanoseconds) {
                    failed += 1
                }
            }
        }
        self.published.increment(by: events.count - failed)
        if failed > 0 {
            self.failures.increment(by: failed)
            self.logger.warning("events committed but not published", metadata: ["tenant": "\(tenant)", "count": "\(failed)"])
        }
    }

    /// One event on its own subject, and an ACP message's thread advance; false when the event
    /// was not published (a lost advance is logged apart: the event is on the bus).
    private func publishAlone(_ committed: CommittedEvent, tenant: String, committedAtNanoseconds: Int64) -> Bool {
        let envelope = Self.envelope(of: committed, tenant: tenant, committedAtNanoseconds: committedAtNanoseconds)
        let subject = self.subjects.event(
            tenant: tenant,
            swarm: committed.event.swarmID,
            agent: committed.event.agentID,
            kind: committed.event.kind
        )
        do {
            let bytes: [UInt8] = try envelope.serializedBytes()
            try self.connection.publish(bytes, to: subject)
            self.messages.increment()
        } catch {
            return false
        }
        if let acp = committed.event.acp {
            // The thread's advance, for the notifier (its stream keeps these, not the messages).
            let notice = ACPAdvanceNotice(
                tenant: tenant,
                swarmId: committed.event.swarmID,
                agentId: committed.event.agentID,
                threadId: acp.threadID,
                threadSeq: committed.threadSeq,
                committedAt: committedAtNanoseconds / 1_000_000
            )
            do {
                try self.connection.publish(Array(try JSONEncoder().encode(notice)), to: self.subjects.acpAdvanced(tenant: tenant))
            } catch {
                self.advanceFailures.increment()
                self.logger.warning(
                    "an ACP thread's advance not published (the notifier misses its push)",
                    metadata: ["tenant": "\(tenant)", "thread": "\(acp.threadID)", "error": "\(error)"]
                )
            }
        }
        return true
    }

    private static func envelope(of committed: CommittedEvent, tenant: String, committedAtNanoseconds: Int64) -> BusEventEnvelope {
        var envelope = BusEventEnvelope()
        envelope.tenantID = tenant
        envelope.seq = committed.seq
        envelope.msgID = committed.event.msgID
        envelope.swarmID = committed.event.swarmID
        envelope.agentID = committed.event.agentID
        envelope.kind = committed.event.kind
        envelope.severity = committed.event.severity
        envelope.occurredUnixNano = committed.event.occurredAtMilliseconds * 1_000_000
        envelope.committedUnixNano = committedAtNanoseconds
        envelope.frame = committed.frameData
        envelope.requestID = committed.event.requestID
        if let acp = committed.event.acp {
            envelope.threadID = acp.threadID
            envelope.threadSeq = committed.threadSeq
        }
        return envelope
    }

    /// An envelope's encoded size or more: its strings and frame, and 128 bytes for the tags,
    /// lengths and the varints of its numbers (at most 108: 13 one-byte tags, six varints of up
    /// to ten bytes, seven lengths of up to five).
    static func envelopeSizeBound(of committed: CommittedEvent, tenant: String) -> Int {
        128 + tenant.utf8.count + committed.event.msgID.utf8.count + committed.event.swarmID.utf8.count
            + committed.event.agentID.utf8.count + committed.event.requestID.utf8.count + committed.frameCount
            + (committed.event.acp?.threadID.utf8.count ?? 0)
    }
}

import Contracts
import EventLog
import Foundation
import Logging
import Metrics
import ServiceKit
import SwiftProtobuf

/// Publishes committed events on the live feed: one `EventEnvelope` per event on its subject,
/// carrying the frame rendered at commit; and for an ACP message, its thread's advance
/// (``ACPAdvanceNotice``) for the notifier.
struct EventPublisher: Sendable {
    let connection: NATSConnection
    let subjects: Subjects
    let logger: Logger
    private let failures = Counter(label: "ingest_publish_failures_total")
    private let published = Counter(label: "ingest_events_published_total")

    init(connection: NATSConnection, subjects: Subjects, logger: Logger) {
        self.connection = connection
        self.subjects = subjects
        self.logger = logger
    }

    /// Publishes in the order given (seq order). A failed publish is counted and logged, not
    /// thrown: the event is committed, and consumers back-fill a seq gap from the log.
    func publish(tenant: String, events: [CommittedEvent], committedAtNanoseconds: Int64) {
        var failed = 0
        for committed in events {
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
            envelope.frame = Data(committed.frame)
            envelope.requestID = committed.event.requestID
            if let acp = committed.event.acp {
                envelope.threadID = acp.threadID
                envelope.threadSeq = committed.threadSeq
            }
            do {
                let bytes: [UInt8] = try envelope.serializedBytes()
                let subject = self.subjects.event(
                    tenant: tenant,
                    swarm: committed.event.swarmID,
                    agent: committed.event.agentID,
                    kind: committed.event.kind
                )
                try self.connection.publish(bytes, to: subject)
                if let acp = committed.event.acp {
                    // The thread's advance, for the notifier (its stream keeps these, not the
                    // messages).
                    let notice = ACPAdvanceNotice(
                        tenant: tenant,
                        swarmId: committed.event.swarmID,
                        agentId: committed.event.agentID,
                        threadId: acp.threadID,
                        threadSeq: committed.threadSeq,
                        committedAt: committedAtNanoseconds / 1_000_000
                    )
                    try self.connection.publish(Array(try JSONEncoder().encode(notice)), to: self.subjects.acpAdvanced(tenant: tenant))
                }
            } catch {
                failed += 1
            }
        }
        self.published.increment(by: events.count - failed)
        if failed > 0 {
            self.failures.increment(by: failed)
            self.logger.warning("events committed but not published", metadata: ["tenant": "\(tenant)", "count": "\(failed)"])
        }
    }
}

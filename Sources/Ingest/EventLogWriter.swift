import Contracts
import EventLog
import Foundation
import Logging
import Metrics
import PostgresNIO
import ServiceKit
import Synchronization

/// Group commit: requests of one tenant queue here and one writer task per tenant commits them
/// together, up to `ingest.write-batch-events` events per transaction, then publishes them.
///
/// Bounded: more than `ingest.max-queued-events` events, or `ingest.max-queued-bytes` of them,
/// waiting across tenants answers 429 (nothing queued). A failed transaction answers 503 to every request in it (nothing stored,
/// unless the commit reached Postgres and only its answer was lost, in which case the retry
/// reports those events as duplicates).
final class EventLogWriter: Sendable {
    private struct Submission {
        var events: [PreparedEvent]
        var bytes: Int
        var requestID: String
        var continuation: CheckedContinuation<[ItemOutcome], any Error>
    }

    private struct State {
        var queues: [String: [Submission]] = [:]
        var writing: Set<String> = []
        var queuedEvents = 0
        var queuedBytes = 0
    }

    private let state = Mutex(State())
    private let log: EventLogAppender
    private let publisher: EventPublisher
    private let maxQueuedEvents: Int
    private let maxQueuedBytes: Int
    private let writeBatchEvents: Int
    private let commitTimeout: Duration
    private let logger: Logger
    private let transactionEvents = Recorder(label: "ingest_transaction_events")
    private let refused = Counter(label: "ingest_requests_refused_total", dimensions: [("reason", "queue_full")])

    init(log: EventLogAppender, publisher: EventPublisher, settings: IngestSettings, logger: Logger) {
        self.log = log
        self.publisher = publisher
        self.maxQueuedEvents = settings.maxQueuedEvents
        self.maxQueuedBytes = settings.maxQueuedBytes
        self.writeBatchEvents = settings.writeBatchEvents
        self.commitTimeout = .seconds(settings.commitTimeoutSeconds)
        self.logger = logger
    }

    /// Stores `events` for `tenant` and publishes them; returns once they are committed.
    func submit(tenant: String, events: [PreparedEvent], requestID: String) async throws -> [ItemOutcome] {
        if events.isEmpty { return [] }
        let bytes = events.reduce(0) { $0 + $1.footprint }
        guard bytes <= self.maxQueuedBytes else {
            throw ServiceKitError(
                .api(.payloadTooLarge),
                "the request's events take \(bytes) bytes; at most \(self.maxQueuedBytes) can wait for commit"
            )
        }
        return try await withCheckedThrowingContinuation { continuation in
            let start: Bool? = self.state.withLock { state in
                guard state.queuedEvents + events.count <= self.maxQueuedEvents, state.queuedBytes + bytes <= self.maxQueuedBytes else { return nil }
                state.queuedEvents += events.count
                state.queuedBytes += bytes
                state.queues[tenant, default: []].append(Submission(events: events, bytes: bytes, requestID: requestID, continuation: continuation))
                return state.writing.insert(tenant).inserted
            }
            switch start {
            case nil:
                self.refused.increment()
                continuation.resume(
                    throwing: ServiceKitError(.api(.rateLimited), "ingest is at its queue limit; retry shortly", retryAfterSeconds: 1)
                )
            case true?:
                Task { await self.drain(tenant: tenant) }
            case false?:
                break  // the tenant's writer will take it
            }
        }
    }

    private func drain(tenant: String) async {
        while true {
            let group: [Submission] = self.state.withLock { state in
                guard var queue = state.queues[tenant], !queue.isEmpty else {
                    state.queues[tenant] = nil
                    state.writing.remove(tenant)
                    return []
                }
                var taken = 0
                var count = 0
                while taken < queue.count, count == 0 || count + queue[taken].events.count <= self.writeBatchEvents {
                    count += queue[taken].events.count
                    taken += 1
                }
                let group = Array(queue[..<taken])
                queue.removeFirst(taken)
                state.queues[tenant] = queue
                return group
            }
            if group.isEmpty { return }
            await self.commit(tenant: tenant, group: group)
        }
    }

    /// The append, or 503 once `commitTimeout` passes: while Postgres is unreachable its pool
    /// queues requests until a circuit breaker trips (a minute), which would hold clients
    /// that long. The outcome of a timed-out append is left to the client's retry (duplicates).
    private func appendWithinDeadline(tenant: String, events: [PreparedEvent], committedAt: Date) async throws -> ([ItemOutcome], [CommittedEvent]) {
        let timeout = self.commitTimeout
        return try await withDeadline(
            timeout,
            orThrow: ServiceKitError(
                .api(.serviceUnavailable),
                "the event log did not answer within \(timeout); retry (events already stored are then reported as duplicates)",
                retryAfterSeconds: 1
            )
        ) {
            // Published here, not by the caller: a commit that completes after the deadline
            // (the client got 503) is still on the live feed.
            let (outcomes, committed) = try await self.log.append(tenant: tenant, events: events, committedAt: committedAt)
            self.publisher.publish(tenant: tenant, events: committed, committedAtNanoseconds: Int64(committedAt.timeIntervalSince1970 * 1e9))
            return (outcomes, committed)
        }
    }

    private func commit(tenant: String, group: [Submission]) async {
        // The first occurrence of a msg_id in the group goes to the log; later ones are its
        // duplicates.
        var unique: [PreparedEvent] = []
        var firstIndex: [String: Int] = [:]
        var positions: [[Int]] = []
        for submission in group {
            var mine: [Int] = []
            for var event in submission.events {
                event.requestID = submission.requestID
                if let index = firstIndex[event.msgID] {
                    mine.append(-1 - index)
                } else {
                    firstIndex[event.msgID] = unique.count
                    mine.append(unique.count)
                    unique.append(event)
                }
            }
            positions.append(mine)
        }
        let eventCount = group.reduce(0) { $0 + $1.events.count }
        let byteCount = group.reduce(0) { $0 + $1.bytes }
        defer {
            self.state.withLock {
                $0.queuedEvents -= eventCount
                $0.queuedBytes -= byteCount
            }
        }

        let committedAt = Date()
        let result: Result<[ItemOutcome], any Error>
        do {
            let (outcomes, _) = try await self.appendWithinDeadline(tenant: tenant, events: unique, committedAt: committedAt)
            self.transactionEvents.record(unique.count)
            result = .success(outcomes)
        } catch let error as ServiceKitError {
            result = .failure(error)
        } catch {
            self.logger.error("event log append failed", metadata: ["tenant": "\(tenant)", "error": "\(String(reflecting: error))"])
            result = .failure(
                ServiceKitError(
                    .api(.serviceUnavailable),
                    "the event log is unavailable; retry (events already stored are then reported as duplicates)",
                    retryAfterSeconds: 1
                )
            )
        }
        for (submission, mine) in zip(group, positions) {
            switch result {
            case .success(let outcomes):
                submission.continuation.resume(
                    returning: mine.map { position in
                        if position >= 0 { return outcomes[position] }
                        switch outcomes[-1 - position] {
                        case .accepted(let seq), .duplicate(let seq): return .duplicate(seq: seq)
                        case .rejected(let reason): return .rejected(reason: reason)
                        }
                    }
                )
            case .failure(let error):
                submission.continuation.resume(throwing: error)
            }
        }
    }
}

import Contracts
import Logging
import NIOCore
import ServiceKit
import Synchronization

/// Something that takes a tenant's events in seq order: a connection.
protocol FeedListener: AnyObject, Sendable {
    /// The next event of the tenant (every one, in seq order, without gaps).
    func offer(_ event: FeedEvent)
    /// Events `from...to` were committed but cannot be delivered (the log was unreachable for
    /// their back-fill).
    func offerGap(from: Int64, to: Int64)
}

/// One tenant's live feed on this replica: one NATS subscription shared by every connection of
/// the tenant, each event parsed once and handed to every listener in seq order.
///
/// Contiguity: an event whose seq is past the next one expected means publishes were lost or
/// overtaken (ingest replicas publish independently). Since seqs are assigned under the
/// tenant's row lock, a committed seq means every lower seq is committed too, so the missing
/// ones are read from the log at once and delivered first; their late copies are dropped.
final class TenantFeed: Sendable {
    private struct State {
        /// The last seq handed to listeners; nil until the feed has read the log's head.
        var head: Int64?
        var listeners: [ObjectIdentifier: any FeedListener] = [:]
        var waiting: [CheckedContinuation<Int64, any Error>] = []
        var failure: (any Error)?
    }

    let tenant: String
    private let state = Mutex(State())
    private let reader: EventLogReader
    private let logger: Logger
    private let backfilled = FanoutMetrics.backfilled

    init(tenant: String, reader: EventLogReader, logger: Logger) {
        self.tenant = tenant
        self.reader = reader
        self.logger = logger
    }

    /// The seq up to which a listener joining now must replay from the log; everything after
    /// it reaches the listener live.
    func join(_ listener: any FeedListener) async throws -> Int64 {
        try await withCheckedThrowingContinuation { continuation in
            self.state.withLock { state in
                state.listeners[ObjectIdentifier(listener)] = listener
                if let head = state.head {
                    continuation.resume(returning: head)
                } else if let failure = state.failure {
                    state.listeners[ObjectIdentifier(listener)] = nil
                    continuation.resume(throwing: failure)
                } else {
                    state.waiting.append(continuation)
                }
            }
        }
    }

    func leave(_ listener: any FeedListener) {
        _ = self.state.withLock { $0.listeners.removeValue(forKey: ObjectIdentifier(listener)) }
    }

    /// The last seq handed to listeners.
    var head: Int64? { self.state.withLock { $0.head } }

    /// Reads the subscription until it ends. `subscription` must be active (flushed) before
    /// this reads the head, so nothing committed after the head can be missed.
    func run(_ subscription: NATSSubscription) async {
        let head: Int64
        do {
            head = try await self.reader.head(tenant: self.tenant)
        } catch {
            self.logger.warning("tenant feed cannot read the log's head", metadata: ["tenant": "\(self.tenant)", "error": "\(String(reflecting: error))"])
            let waiting = self.state.withLock { state in
                state.failure = ServiceKitError(.api(.serviceUnavailable), "the event log is unavailable; retry", retryAfterSeconds: 1)
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume(throwing: ServiceKitError(.api(.serviceUnavailable), "the event log is unavailable; retry", retryAfterSeconds: 1)) }
            return
        }
        let waiting = self.state.withLock { state in
            state.head = head
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume(returning: head) }

        for await message in subscription {
            guard let envelope = try? BusEventEnvelope(serializedBytes: message.payload) else {
                self.logger.warning("undecodable envelope on the live feed", metadata: ["subject": "\(message.subject)"])
                continue
            }
            let event = FeedEvent(envelope)
            let expected = (self.head ?? 0) + 1
            if event.seq < expected { continue }  // a late or repeated copy
            if event.seq > expected {
                await self.backfill(from: expected, to: event.seq - 1)
            }
            self.deliver(event)
        }
    }

    private func deliver(_ event: FeedEvent) {
        let listeners = self.state.withLock { state in
            state.head = event.seq
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.offer(event) }
    }

    private func backfill(from: Int64, to: Int64) async {
        var after = from - 1
        do {
            while after < to {
                let page = try await self.reader.events(tenant: self.tenant, after: after, through: to, filter: .everything, limit: 1000)
                guard !page.isEmpty else { break }
                for event in page where event.seq > after {
                    self.deliver(event)
                    after = event.seq
                }
                self.backfilled.increment(by: page.count)
            }
        } catch {
            self.logger.warning("live feed gap not back-filled", metadata: ["tenant": "\(self.tenant)", "from": "\(after + 1)", "to": "\(to)", "error": "\(String(reflecting: error))"])
        }
        if after < to {
            // Not in the log (or the log is unreachable): tell every listener, and move on.
            let listeners = self.state.withLock { state in
                state.head = to
                return Array(state.listeners.values)
            }
            for listener in listeners { listener.offerGap(from: after + 1, to: to) }
        }
    }
}

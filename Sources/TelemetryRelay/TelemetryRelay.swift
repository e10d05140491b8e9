public import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
public import Logging
import NIOCore
import ServiceKit
import Synchronization

/// A loopback OTLP/HTTP endpoint the connector serves the command it runs, so that the command's
/// telemetry reaches ingest without the command ever holding the ingest key.
///
/// - It listens on `127.0.0.1` on a port of its own and takes `POST /v1/traces`, `/v1/logs` and
///   `/v1/metrics` (protobuf or OTLP JSON, gzip or not) that carry this run's ``secret`` in
///   `x-swarmdeck-relay` (or as `Authorization: Bearer`); the secret is worth nothing anywhere
///   else. Anything else: 415, 401, 503 (busy), 413, 400, or Hummingbird's 404.
/// - It stamps every export with the connector's swarm and agent (``RelayStamp``), counts it
///   against a rate, queues it and answers 200 at once: the command's exporter never waits on
///   ingest. A forwarder posts what is queued to ingest with the connector's key, joining
///   exports of one signal, retrying with back-off while ingest is unreachable or busy.
/// - Bounded (``RelayLimits``): an export past the rate gets 429, one that finds the queue full
///   503, both with `Retry-After`; what ingest refuses for good, and what is still queued when
///   the relay closes, is dropped. All of it is counted in ``statistics``.
public final class TelemetryRelay: Sendable {
    /// What the relay has taken, forwarded, refused and dropped since it started.
    public struct Statistics: Sendable, Equatable {
        /// Exports answered 200, and their items.
        public var acceptedExports = 0
        public var acceptedItems = 0
        /// Items ingest took.
        public var forwardedItems = 0
        /// Items of exports refused over the rate (429).
        public var rateRefusedItems = 0
        /// Exports refused because the queue was full, or as many were being read as may be (503).
        public var fullRefusedExports = 0
        /// Items ingest refused for good, or still queued when the relay closed.
        public var droppedItems = 0
        /// Requests refused as unauthenticated, malformed or too large.
        public var badRequests = 0
        /// Items waiting for ingest now.
        public var queuedItems = 0

        /// Whatever was refused or dropped: what the connector reports.
        public var lossCount: Int { self.rateRefusedItems + self.fullRefusedExports + self.droppedItems + self.badRequests }
    }

    private struct State {
        var queue: RelayQueue
        var bucket: TokenBucket
        var statistics = Statistics()
        var inFlight = 0
    }

    /// The header the command's exporter sends the secret in
    /// (`OTEL_EXPORTER_OTLP_HEADERS=x-swarmdeck-relay=<secret>`).
    public static let secretHeader = "x-swarmdeck-relay"
    /// The most requests read at once (each up to ``RelayLimits/maxBodyBytes``); more get 503.
    public static let maxConcurrentRequests = 4

    /// This run's secret: 32 random bytes, hex.
    public let secret: String
    public let stamp: RelayStamp
    public let limits: RelayLimits
    let ingestURL: String
    let key: String
    let client: HTTPClient
    let logger: Logger
    private let state: Mutex<State>
    private let doorbell: AsyncStream<Void>.Continuation
    private let rings: AsyncStream<Void>
    private let boundPort = Atomic<Int>(0)
    private let tasks = Mutex<(server: Task<Void, any Error>?, forwarder: Task<Void, Never>?)>((nil, nil))
    private let listener = Mutex<(any Channel)?>(nil)

    private init(ingestURL: String, key: String, stamp: RelayStamp, limits: RelayLimits, client: HTTPClient, logger: Logger) {
        self.secret = randomHex(bytes: 32)
        self.ingestURL = ingestURL.hasSuffix("/") ? String(ingestURL.dropLast()) : ingestURL
        self.key = key
        self.stamp = stamp
        self.limits = limits
        self.client = client
        self.logger = logger
        self.state = Mutex(
            State(queue: RelayQueue(maxBytes: limits.bufferBytes), bucket: TokenBucket(capacity: limits.burstItems, perSecond: limits.itemsPerSecond))
        )
        (self.rings, self.doorbell) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Starts a relay on a free loopback port, forwarding to ingest at `ingestURL` with `key`;
    /// answers once it listens. ``close()`` ends it.
    public static func start(
        ingestURL: String,
        key: String,
        stamp: RelayStamp,
        limits: RelayLimits = RelayLimits(),
        client: HTTPClient,
        logger: Logger = Logger(label: "swarmdeck.relay", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws -> TelemetryRelay {
        let relay = TelemetryRelay(ingestURL: ingestURL, key: key, stamp: stamp, limits: limits, client: client, logger: logger)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            router: relay.router(),
            server: .http1(configuration: .init(idleTimeout: TimeAmount(limits.idleTimeout))),
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: "swarmdeck-relay"),
            onServerRunning: { channel in
                relay.listener.withLock { $0 = channel }
                relay.boundPort.store(channel.localAddress?.port ?? 0, ordering: .releasing)
                continuation.yield(relay.port)
                continuation.finish()
            },
            logger: logger
        )
        let server = Task {
            defer { continuation.finish() }
            try await application.run()
        }
        let forwarder = Task { await relay.forwardLoop() }
        relay.tasks.withLock { $0 = (server, forwarder) }
        for await _ in ports { return relay }
        forwarder.cancel()
        switch await server.result {
        case .failure(let error): throw error
        case .success: throw CancellationError()
        }
    }

    /// The port it listens on.
    public var port: Int { self.boundPort.load(ordering: .acquiring) }

    /// `http://127.0.0.1:<port>`: what `OTEL_EXPORTER_OTLP_ENDPOINT` names.
    public var endpoint: String { "http://127.0.0.1:\(self.port)" }

    /// What it has done so far.
    public var statistics: Statistics {
        self.state.withLock { state in
            var statistics = state.statistics
            statistics.queuedItems = state.queue.items
            return statistics
        }
    }

    /// Stops listening, forwards what is queued for up to ``RelayLimits/drainTime``, then drops
    /// (and counts) the rest.
    public func close() async {
        let (server, forwarder) = self.tasks.withLock { tasks in
            defer { tasks = (nil, nil) }
            return tasks
        }
        if let listener = self.listener.withLock({ $0.take() }) { try? await listener.close() }
        server?.cancel()
        _ = await server?.result
        self.doorbell.finish()
        if let forwarder {
            await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    await forwarder.value
                    return true
                }
                group.addTask { [drainTime = self.limits.drainTime] in
                    try? await Task.sleep(for: drainTime)
                    return false
                }
                if await group.next() == false { forwarder.cancel() }
                group.cancelAll()
            }
        }
        self.state.withLock { state in
            state.statistics.droppedItems += state.queue.removeAll()
        }
    }

    /// Whether `request` carries this run's secret.
    func isAuthorized(_ request: Request) -> Bool {
        let offered =
            request.headers[HTTPField.Name(Self.secretHeader)!]
            ?? request.headers[.authorization].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        guard let offered else { return false }
        return constantTimeEqual(Array(offered.utf8), Array(self.secret.utf8))
    }

    // MARK: Intake (called by the routes)

    /// Reserves a slot for a request being read; false when ``maxConcurrentRequests`` are.
    func beginRequest() -> Bool {
        self.state.withLock { state in
            guard state.inFlight < Self.maxConcurrentRequests else { return false }
            state.inFlight += 1
            return true
        }
    }

    func endRequest() {
        self.state.withLock { $0.inFlight -= 1 }
    }

    func countBusy() {
        self.state.withLock { $0.statistics.fullRefusedExports += 1 }
    }

    func countBadRequest() {
        self.state.withLock { $0.statistics.badRequests += 1 }
    }

    /// Charges `items` to the rate; nil if admitted, else how long until it is out of debt.
    func admit(items: Int) -> Duration? {
        self.state.withLock { state in
            let wait = state.bucket.charge(Double(items))
            if wait != nil { state.statistics.rateRefusedItems += items }
            return wait
        }
    }

    /// Queues a stamped export for ingest; false when the queue is full.
    func enqueue(_ entry: RelayQueue.Entry) -> Bool {
        let queued = self.state.withLock { state in
            guard state.queue.push(entry) else {
                state.statistics.fullRefusedExports += 1
                return false
            }
            state.statistics.acceptedExports += 1
            state.statistics.acceptedItems += entry.items
            return true
        }
        if queued { self.doorbell.yield() }
        return queued
    }

    // MARK: Forwarding

    /// What ingest made of one forward.
    enum Delivery: Equatable {
        /// Taken; `rejected` of its items refused (the export's partial success).
        case delivered(rejected: Int)
        /// Refused for good (a 4xx other than 408 and 429): dropped.
        case refused(String)
        /// Worth retrying (unreachable, 408, 429, 5xx), after `after` if ingest said.
        case retry(after: Duration?, String)
    }

    private func forwardLoop() async {
        var failures = 0
        // One turn per ring, and a last one once the doorbell is finished (close): each turn
        // forwards until the queue is empty.
        var rings = self.rings.makeAsyncIterator()
        while true {
            let rang = await rings.next() != nil
            while !Task.isCancelled {
                let next = self.state.withLock {
                    $0.queue.peek(maxBytes: self.limits.forwardBytes, maxItems: self.limits.forwardItems, maxValues: self.limits.maxValuesPerExport)
                }
                guard let batch = next else { break }
                switch await self.forward(batch) {
                case .delivered(let rejected):
                    failures = 0
                    self.state.withLock { state in
                        state.queue.remove(batch)
                        state.statistics.forwardedItems += batch.items - rejected
                        state.statistics.droppedItems += rejected
                    }
                case .refused(let reason):
                    failures = 0
                    self.logger.warning("ingest refused \(batch.items) items for good: \(reason)")
                    self.state.withLock { state in
                        state.queue.remove(batch)
                        state.statistics.droppedItems += batch.items
                    }
                case .retry(_, let reason) where failures + 1 >= self.limits.maxForwardAttempts:
                    failures = 0
                    self.logger.warning("ingest did not take \(batch.items) items in \(self.limits.maxForwardAttempts) attempts (\(reason)): dropped")
                    self.state.withLock { state in
                        state.queue.remove(batch)
                        state.statistics.droppedItems += batch.items
                    }
                case .retry(let after, let reason):
                    failures += 1
                    self.logger.debug("forwarding to ingest failed (\(reason)); retrying")
                    let backoff = Duration.milliseconds(min(100 << min(failures, 6), 5000))
                    do {
                        try await Task.sleep(for: max(after ?? .zero, backoff))
                    } catch {
                        return
                    }
                }
            }
            if !rang || Task.isCancelled { return }
        }
    }

    private func forward(_ batch: RelayQueue.Batch) async -> Delivery {
        var request = HTTPClientRequest(url: self.ingestURL + batch.signal.path)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(self.key)")
        request.headers.add(name: "Content-Type", value: batch.json ? "application/json" : "application/x-protobuf")
        request.body = .bytes(ByteBuffer(bytes: batch.bytes))
        do {
            let response = try await self.client.execute(request, timeout: .init(self.limits.forwardTimeout))
            let status = Int(response.status.code)
            // The status decides; a body too long to read is read as none.
            let body = (try? await response.body.collect(upTo: 1 << 20)) ?? ByteBuffer()
            let retryAfter = response.headers.first(name: "Retry-After").flatMap(Int.init).map { Duration.seconds(min(max($0, 0), 60)) }
            switch status {
            case 200..<300:
                return .delivered(rejected: min(batch.items, Self.rejectedItems(batch.signal, in: body, json: batch.json)))
            case 408, 429, 500...:
                return .retry(after: retryAfter, "ingest answered \(status)")
            default:
                return .refused("ingest answered \(status): \(String(buffer: body).prefix(300))")
            }
        } catch {
            return .retry(after: nil, "\(error)")
        }
    }
}

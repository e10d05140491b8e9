import CNATS
import Contracts
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A connection to NATS over nats.c.
///
/// Publishing never waits for the network (nats.c buffers and a flusher thread writes). Calls
/// that block in C (connect, flush) run on dedicated threads, never on the Swift concurrency
/// pool, and so do subscribing and unsubscribing. Requests use one wildcard inbox subscription
/// shared by all requests.
///
/// nats.c's reconnect thread holds the connection's lock through each connect attempt, so
/// while the connection is reconnecting a call that takes the lock (a publish among them) can
/// wait up to the connect timeout (``NATSConfiguration/connectTimeoutMilliseconds``).
/// ``status`` never takes it; subscribing and unsubscribing wait on the dedicated threads; the
/// pool of servers is the configured URLs only, so no attempt goes to an address a server
/// once gossiped and no longer has.
public final class NATSConnection: Sendable {
    let handle: NATSHandle
    private let events: ConnectionEvents
    private let requests = MadeOnce<RequestMux>()
    private let pulls = MadeOnce<PullMux>()
    /// The configuration it was opened with.
    public let configuration: NATSConfiguration

    /// The threads for the nats.c calls that block (``runBlocking(_:)``): neither the Swift
    /// concurrency pool nor Dispatch's. On Linux the Swift pool runs on Dispatch's worker threads,
    /// so calls waiting there on nats.c's lock starve every task of the process: eight subscribes
    /// waiting on a reconnect attempt delayed a 200-ms sleep of the same process by 6.75 s here.
    /// Sixteen threads; more calls waiting at once queue behind them, without holding a thread.
    static let blockingThreads: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 16)
        pool.start()
        return pool
    }()

    private init(handle: NATSHandle, events: ConnectionEvents, configuration: NATSConfiguration) {
        self.handle = handle
        self.events = events
        self.configuration = configuration
    }

    /// Opens a connection. With ``NATSConfiguration/retryOnFailedConnect`` a server that is
    /// down returns a connection still ``NATSConnectionStatus/connecting``.
    public static func connect(_ configuration: NATSConfiguration) async throws -> NATSConnection {
        guard !configuration.servers.isEmpty else {
            throw ServiceKitError(.natsConnection, "no NATS server URL configured")
        }
        let events = ConnectionEvents()
        let handle = try await runBlocking { () throws(ServiceKitError) -> NATSHandle in
            // Released by the closed callback, which fires exactly once for a connection that
            // was created; released here when none was.
            let eventsPointer = Unmanaged.passRetained(events).toOpaque()
            var options: OpaquePointer?
            var connection: OpaquePointer?
            let status: natsStatus
            do throws(ServiceKitError) {
                try natsCheck(natsOptions_Create(&options), "creating NATS options")
                defer { natsOptions_Destroy(options) }
                try Self.apply(configuration, to: options, events: eventsPointer)
                status = natsConnection_Connect(&connection, options)
            } catch {
                Unmanaged<ConnectionEvents>.fromOpaque(eventsPointer).release()
                throw error
            }
            if let connection, status == NATS_OK || (status == NATS_NOT_YET_CONNECTED && configuration.retryOnFailedConnect) {
                if status == NATS_OK { events.recordConnected() }
                return NATSHandle(connection)
            }
            Unmanaged<ConnectionEvents>.fromOpaque(eventsPointer).release()
            throw ServiceKitError(
                .natsConnection,
                "cannot connect to NATS at \(configuration.displayedServers): \(String(cString: natsStatus_GetText(status)))"
            )
        }
        return NATSConnection(handle: handle, events: events, configuration: configuration)
    }

    private static func apply(
        _ configuration: NATSConfiguration,
        to options: OpaquePointer?,
        events: UnsafeMutableRawPointer
    ) throws(ServiceKitError) {
        var servers = configuration.servers.map { strdup($0) }
        defer { for server in servers { free(server) } }
        try servers.withUnsafeMutableBufferPointer { (buffer) throws(ServiceKitError) in
            try buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { (constBuffer) throws(ServiceKitError) in
                try natsCheck(
                    natsOptions_SetServers(options, constBuffer.baseAddress, Int32(constBuffer.count)),
                    "setting NATS servers \(configuration.displayedServers)"
                )
            }
        }
        try natsCheck(natsOptions_SetName(options, configuration.name), "setting connection name")
        try natsCheck(natsOptions_SetSendAsap(options, configuration.sendAsap), "setting send-asap")
        try natsCheck(natsOptions_SetAllowReconnect(options, true), "allowing reconnect")
        try natsCheck(natsOptions_SetMaxReconnect(options, -1), "setting unlimited reconnects")
        try natsCheck(natsOptions_SetReconnectWait(options, Int64(configuration.reconnectWaitMilliseconds)), "setting reconnect wait")
        try natsCheck(natsOptions_SetReconnectBufSize(options, Int32(configuration.reconnectBufferBytes)), "setting reconnect buffer")
        try natsCheck(natsOptions_SetTimeout(options, Int64(configuration.connectTimeoutMilliseconds)), "setting connect timeout")
        // The pool is the configured URLs: a server's gossiped address outlives the server (a
        // container's, a pod's), and each attempt at it holds the connection's lock until the
        // connect timeout. Name every server, or a name that resolves to the live ones.
        try natsCheck(natsOptions_SetIgnoreDiscoveredServers(options, true), "ignoring discovered servers")
        try natsCheck(natsOptions_SetPingInterval(options, 5_000), "setting ping interval")
        try natsCheck(natsOptions_SetMaxPingsOut(options, 3), "setting max pings out")
        if configuration.retryOnFailedConnect {
            // With a connected callback, Connect returns NATS_NOT_YET_CONNECTED and retries in the
            // background; without one, 3.4.1 retries inside Connect (forever, with unlimited
            // reconnects).
            try natsCheck(
                natsOptions_SetRetryOnFailedConnect(options, true, natsConnectedTrampoline, events),
                "setting retry on failed connect"
            )
        }
        try natsCheck(natsOptions_SetDisconnectedCB(options, natsDisconnectedTrampoline, events), "setting disconnected callback")
        try natsCheck(natsOptions_SetReconnectedCB(options, natsReconnectedTrampoline, events), "setting reconnected callback")
        try natsCheck(natsOptions_SetClosedCB(options, natsClosedTrampoline, events), "setting closed callback")
        try natsCheck(natsOptions_SetErrorHandler(options, natsErrorTrampoline, events), "setting error handler")
    }

    // MARK: State

    /// The connection's state now, as its events tell it: never waits on nats.c's lock.
    public var status: NATSConnectionStatus {
        self.events.status
    }

    /// Disconnections, reconnections, asynchronous errors and the close, from now on.
    public func connectionEvents() -> AsyncStream<NATSConnectionEvent> {
        self.events.stream()
    }

    // MARK: Publish

    /// The largest payload the server takes (its `max_payload`, announced when the connection
    /// was made; 1 MiB by default). A larger publish is refused.
    public var maxPayload: Int {
        let announced = Int(natsConnection_GetMaxPayload(self.handle.pointer))
        return announced > 0 ? announced : 1 << 20
    }

    /// Publishes a message. Returns once nats.c has buffered it; use ``flush(timeout:)`` to
    /// know it reached the server.
    public func publish(
        _ payload: some Collection<UInt8>,
        to subject: String,
        reply: String? = nil,
        headers: NATSHeaders = [:]
    ) throws(ServiceKitError) {
        // nats.c writes subjects into the protocol line as given: whitespace or a control
        // character would end the PUB and start a command of the caller's choosing.
        guard Self.isWellFormed(subject), reply.map(Self.isWellFormed) ?? true else {
            throw ServiceKitError(.natsOperation, "publishing: a subject must be non-empty, without whitespace or control characters")
        }
        let status: natsStatus =
            payload.withContiguousStorageIfAvailable { buffer in
                self.publish(buffer, subject: subject, reply: reply, headers: headers)
            }
            ?? Array(payload).withUnsafeBufferPointer { buffer in
                self.publish(buffer, subject: subject, reply: reply, headers: headers)
            }
        try natsCheck(status, "publishing to \(subject)")
    }

    /// A subject (or reply subject) nats.c can put on a protocol line: non-empty, no bytes at or
    /// below space, no DEL.
    static func isWellFormed(_ subject: String) -> Bool {
        !subject.isEmpty && subject.utf8.allSatisfy { $0 > 0x20 && $0 != 0x7F }
    }

    private func publish(
        _ buffer: UnsafeBufferPointer<UInt8>,
        subject: String,
        reply: String?,
        headers: NATSHeaders
    ) -> natsStatus {
        let length = Int32(buffer.count)
        let bytes = UnsafeRawPointer(buffer.baseAddress)
        if headers.isEmpty {
            if let reply {
                return natsConnection_PublishRequest(self.handle.pointer, subject, reply, bytes, length)
            }
            return natsConnection_Publish(self.handle.pointer, subject, bytes, length)
        }
        var message: OpaquePointer?
        let created = natsMsg_Create(
            &message,
            subject,
            reply,
            bytes?.assumingMemoryBound(to: CChar.self),
            length
        )
        guard created == NATS_OK, let message else { return created }
        defer { natsMsg_Destroy(message) }
        let written = headers.write(to: message)
        guard written == NATS_OK else { return written }
        return natsConnection_PublishMsg(self.handle.pointer, message)
    }

    /// Waits until the server has processed everything published so far.
    public func flush(timeout: Duration = .seconds(5)) async throws {
        let milliseconds = timeout.milliseconds
        let handle = self.handle
        try await runBlocking { () throws(ServiceKitError) in
            try natsCheck(natsConnection_FlushTimeout(handle.pointer, milliseconds), "flushing")
        }
    }

    // MARK: Subscribe

    /// Subscribes to `subject`; with `queue`, the messages are spread over the members of
    /// that queue group. Iterate the result to receive; it ends when it is unsubscribed,
    /// drained or the connection closes.
    ///
    /// Runs on the dedicated threads: while nats.c reconnects, subscribing waits for its lock.
    public func subscribe(
        to subject: String,
        queue: String? = nil,
        buffering policy: NATSBufferingPolicy = .backpressure()
    ) async throws(ServiceKitError) -> NATSSubscription {
        try await runBlocking { () throws(ServiceKitError) in
            let buffer = SubscriptionBuffer(policy: policy)
            let handle = try self.subscribe(subject: subject, queue: queue, sink: buffer, wake: buffer)
            // The library queues up to the same limits again before it drops as a slow consumer.
            try natsCheck(
                natsSubscription_SetPendingLimits(handle.pointer, Int32(clamping: policy.maxMessages), Int32(clamping: policy.maxBytes)),
                "setting pending limits on \(subject)"
            )
            return NATSSubscription(subject: subject, handle: handle, buffer: buffer)
        }
    }

    func subscribe(
        subject: String,
        queue: String?,
        sink: some MessageSink,
        wake buffer: SubscriptionBuffer? = nil
    ) throws(ServiceKitError) -> NATSSubscriptionHandle {
        let closure = Unmanaged.passRetained(sink as AnyObject).toOpaque()
        var subscription: OpaquePointer?
        let status =
            if let queue {
                natsConnection_QueueSubscribe(&subscription, self.handle.pointer, subject, queue, natsMessageTrampoline, closure)
            } else {
                natsConnection_Subscribe(&subscription, self.handle.pointer, subject, natsMessageTrampoline, closure)
            }
        guard status == NATS_OK, let subscription else {
            Unmanaged<AnyObject>.fromOpaque(closure).release()
            throw natsError(status, "subscribing to \(subject)")
        }
        let handle = NATSSubscriptionHandle(subscription, buffer: buffer)
        let completion = natsSubscription_SetOnCompleteCB(subscription, natsCompleteTrampoline, closure)
        guard completion == NATS_OK else {
            // The connection closed under us: a message callback may still be running with the
            // sink, so its retain is leaked rather than released (a rare, bounded leak).
            natsSubscription_Unsubscribe(subscription)
            throw natsError(completion, "installing the completion callback on \(subject)")
        }
        return handle
    }

    // MARK: Request

    /// Sends a request and waits for the first reply.
    /// - Throws: ``ServiceKitError/Code/natsTimeout`` without an answer in time,
    ///   ``ServiceKitError/Code/natsNoResponders`` when nobody is subscribed.
    public func request(
        _ payload: some Collection<UInt8>,
        to subject: String,
        headers: NATSHeaders = [:],
        timeout: Duration = .seconds(5)
    ) async throws -> NATSMessage {
        let mux = try await self.requestMux()
        return try await mux.request(payload, to: subject, headers: headers, timeout: timeout, on: self)
    }

    private func requestMux() async throws(ServiceKitError) -> RequestMux {
        // Made once, on the dedicated threads (subscribing waits for nats.c's lock); the first
        // requests wait for that one.
        try await self.requests.get { () throws(ServiceKitError) in
            try await runBlocking { () throws(ServiceKitError) in try RequestMux.make(on: self) }
        }
    }

    /// The inbox every JetStream pull of this connection is answered on.
    func pullMux() async throws(ServiceKitError) -> PullMux {
        try await self.pulls.get { () throws(ServiceKitError) in
            try await runBlocking { () throws(ServiceKitError) in try PullMux.make(on: self) }
        }
    }

    /// JetStream pulls waiting on this connection (all share one subscription).
    public var waitingPulls: Int { self.pulls.value?.waiting ?? 0 }

    /// The first tokens of every inbox (reply subject) of this connection:
    /// `_INBOX.<connection name>`, so that a NATS user can be allowed to subscribe to its own
    /// replies only (`_INBOX.ingest.>`), not to every other client's.
    public var inboxRoot: String {
        Self.inboxRoot(name: self.configuration.name)
    }

    /// The first tokens of every inbox of a connection named `name` (``inboxRoot``).
    public static func inboxRoot(name: String) -> String {
        "_INBOX." + SubjectToken.encode(name)
    }

    /// A new unique inbox subject (the request and pull muxes each take one as the prefix of
    /// their wildcard subscription).
    public func newInbox() -> String {
        self.inboxRoot + "." + NUID.next()
    }

    // MARK: Shutdown

    /// Drains: stops taking new messages on every subscription, lets consumers finish what was
    /// delivered, flushes publishes, then closes. Returns once closed.
    public func drain(timeout: Duration = .seconds(10)) async {
        if self.events.isClosed { return }
        self.events.recordDraining()
        let handle = self.handle
        _ = try? await runBlocking { () throws(ServiceKitError) in
            if natsConnection_DrainTimeout(handle.pointer, timeout.milliseconds) != NATS_OK {
                natsConnection_Close(handle.pointer)
            }
        }
        await self.events.waitUntilClosed()
    }

    /// Closes at once, dropping whatever is buffered.
    public func close() async {
        let handle = self.handle
        _ = try? await runBlocking { () throws(ServiceKitError) in natsConnection_Close(handle.pointer) }
        await self.events.waitUntilClosed()
    }
}

/// Runs a blocking nats.c call on the dedicated threads (``NATSConnection/blockingThreads``).
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () throws(ServiceKitError) -> T) async throws(ServiceKitError) -> T {
    let result: Result<T, ServiceKitError> = await withCheckedContinuation { continuation in
        NATSConnection.blockingThreads.submit { state in
            guard case .active = state else {
                continuation.resume(returning: .failure(ServiceKitError(.natsClosed, "the NATS threads are stopped")))
                return
            }
            do throws(ServiceKitError) {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    return try result.get()
}

/// Runs a nats.c call that may block on the dedicated threads, without waiting for it.
func runBlockingDetached(_ body: @escaping @Sendable () -> Void) {
    NATSConnection.blockingThreads.submit { state in
        if case .active = state { body() }
    }
}

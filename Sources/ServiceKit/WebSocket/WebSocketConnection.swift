public import Logging
import NIOCore
public import NIOWebSocket
import Synchronization

/// What a WebSocket protocol (`/v1/stream`, `/v1/acp`, the terminal) supplies to the
/// connection engine.
public protocol WebSocketProtocolHandler: AnyObject, Sendable {
    /// One client message, in a task of its own (one at a time, in order: the socket is not
    /// read meanwhile). Returns false when the message was invalid
    /// (the protocol has answered it with an error); too many close the connection.
    func received(_ message: WebSocketClientMessage, on connection: WebSocketConnection) async -> Bool
    /// The writer: runs in the connection's task, writing through `writer`, until the
    /// protocol's queue ends (``stop()``). Call `writer.endBatch()` whenever nothing more is
    /// ready, before waiting.
    func write(to writer: WebSocketFrameWriter) async throws
    /// Ends the writer's wait: the reader ended or the connection is closing. Called more than
    /// once.
    func stop()
    /// Pings the client: a message of the protocol's own, or `writer.ping()` from the writer.
    func ping()
    /// Called at every heartbeat while the connection lives, for the protocol's own timers.
    func heartbeat()
    /// After the reader and the writer ended, before the close frame: let go of what the
    /// connection holds (feeds, subscriptions).
    func finish() async
}

extension WebSocketProtocolHandler {
    public func heartbeat() {}
    public func finish() async {}
}

/// One WebSocket connection, whatever its protocol: a writer, a reader that is a channel
/// handler (``WebSocketReadHandler``), a close that happens once with one reason, message size
/// and count budgets, invalid-message budget, pings, liveness and the stall check (visited by
/// ``WebSocketHeartbeats``), and a writer that frames its messages itself and hands each batch
/// of them to the socket at once.
///
/// No task reads (a task is memory per connection): each client message is handled in a short
/// task of its own. The writer runs in the caller's task (``run(on:handler:)``) or, for a
/// protocol whose writer can sleep (``WebSocketIdleWriter``), whenever it has something to
/// write (``start(on:handler:whenDone:)``): on the socket's event loop while nothing makes it
/// wait, else in a short task. An idle connection then holds no task.
/// The client's close, the socket closing or the server shutting down stops the protocol's
/// queue, which ends the writer.
public final class WebSocketConnection: Heartbeating, Sendable {
    private struct State {
        var closeReason: (WebSocketErrorCode, String)?
        var liveness: ConnectionLiveness
        var budget: MessageBudget
        var done = false
        var handler: (any WebSocketProtocolHandler)?
        /// Closed outright when a write stalls: a writer waiting on a full socket wakes only then.
        var channel: (any Channel)?
        var wire: WebSocketWireHandler?
        var invalidMessages = 0
    }

    public let limits: WebSocketLimits
    /// Who opened it: closed when that device is revoked.
    public let identity: AccessIdentity?
    private let heartbeats: WebSocketHeartbeats
    private let logger: Logger
    private let state: Mutex<State>

    public init(limits: WebSocketLimits, heartbeats: WebSocketHeartbeats, identity: AccessIdentity? = nil, logger: Logger) {
        self.limits = limits
        self.identity = identity
        self.heartbeats = heartbeats
        self.logger = logger
        self.state = Mutex(
            State(
                liveness: ConnectionLiveness(
                    pingInterval: limits.pingInterval,
                    stalledAfter: limits.stalledAfter,
                    checksAnswers: limits.liveness == .clientMessages,
                    now: .now
                ),
                budget: MessageBudget(perTenSeconds: limits.maxMessagesPer10Seconds, now: .now)
            )
        )
    }

    /// Runs the connection on `socket` until the client leaves, breaks a limit or the protocol
    /// closes it; then sends the close frame with the first reason given.
    public func run(on socket: UpgradedWebSocket, handler: some WebSocketProtocolHandler) async {
        let writer = self.begin(on: socket, handler: handler)
        do {
            try await handler.write(to: writer)
        } catch {
            self.writeFailed(error)
        }
        await self.end(on: socket, handler: handler, writer: writer)
    }

    /// Serves `socket` like ``run(on:handler:)`` but returns at once: the writer runs whenever
    /// the protocol has something to write, on the socket's event loop while it needs no wait
    /// and in a short task when it does, and nothing is held while it has nothing. `whenDone`
    /// runs once the connection has ended (after its close frame).
    public func start(on socket: UpgradedWebSocket, handler: some WebSocketIdleWriter, whenDone: @escaping @Sendable () -> Void) {
        let writer = self.begin(on: socket, handler: handler)
        WebSocketWriterRuns(connection: self, socket: socket, handler: handler, writer: writer, whenDone: whenDone).wake()
    }

    private func begin(on socket: UpgradedWebSocket, handler: some WebSocketProtocolHandler) -> WebSocketFrameWriter {
        self.state.withLock { state in
            state.handler = handler
            state.channel = socket.channel
            state.wire = socket.wire
        }
        self.heartbeats.add(self)
        socket.reader.attach(self)
        return WebSocketFrameWriter(wire: socket.wire, connection: self, compresses: socket.deflate != nil)
    }

    func writeFailed(_ error: any Error) {
        self.logger.debug("WebSocket write ended", metadata: ["error": "\(String(reflecting: error))"])
        self.close(.goingAway, "write failed")
    }

    /// After the writer: no message is handled once the protocol lets go of what it holds, which
    /// it does before the close frame (a close frame to a stalled socket can take a while).
    func end(on socket: UpgradedWebSocket, handler: some WebSocketProtocolHandler, writer: WebSocketFrameWriter) async {
        writer.endBatch()
        handler.stop()
        await socket.reader.detach()
        await handler.finish()
        let (code, reason) = self.state.withLock { $0.closeReason } ?? (.normalClosure, "")
        socket.close(code, reason: reason)
        self.state.withLock { state in
            state.done = true
            state.handler = nil
            state.channel = nil
            state.wire = nil
        }
        self.heartbeats.remove(self)
    }

    /// Closes the connection with `code` and `reason`, unless it is closing already (the first
    /// reason wins).
    public func close(_ code: WebSocketErrorCode, _ reason: String) {
        let handler: (any WebSocketProtocolHandler)? = self.state.withLock { state in
            if state.closeReason == nil { state.closeReason = (code, reason) }
            return state.handler
        }
        handler?.stop()
    }

    /// Whether a close has been asked for.
    public var isClosing: Bool { self.state.withLock { $0.closeReason != nil } }

    /// Counts an invalid client message (the protocol's judgement, in the reader or the
    /// writer); at ``WebSocketLimits/maxInvalidMessages`` the connection is closed (1008).
    public func countInvalid() {
        let tooMany = self.state.withLock { state in
            state.invalidMessages += 1
            return state.invalidMessages >= self.limits.maxInvalidMessages
        }
        if tooMany { self.close(.policyViolation, "too many invalid messages") }
    }

    func writeStarted() {
        self.state.withLock { $0.liveness.writing(since: .now) }
    }

    func writeEnded() {
        self.state.withLock { $0.liveness.wrote() }
    }

    // MARK: Reading (from the socket's read handler)

    /// A client message arrived (on the event loop): false drops it, the connection closing or
    /// the message breaking the count budget (which closes it, 1008).
    func admit(at now: ContinuousClock.Instant) -> Bool {
        let admitted: Bool? = self.state.withLock { state in
            guard state.closeReason == nil else { return nil }
            state.liveness.heard(at: now)
            return state.budget.admit(at: now) == .accept
        }
        guard let admitted else { return false }
        if !admitted { self.close(.policyViolation, "more than \(self.limits.maxMessagesPer10Seconds) messages in 10 s") }
        return admitted
    }

    /// Handles one admitted client message (in a task of its own: the memory its handling
    /// needs is given back when it is done).
    func handle(_ message: WebSocketClientMessage) async {
        guard let handler = self.state.withLock({ $0.closeReason == nil ? $0.handler : nil }) else { return }
        if await !handler.received(message, on: self) {
            self.countInvalid()
        }
    }

    /// The client closed, or the socket did: the protocol's queue ends, which ends the writer.
    func inputEnded() {
        self.state.withLock { $0.handler }?.stop()
    }

    // MARK: Heartbeat

    /// Closes the connection (1008) if its device was revoked after its token was issued.
    public func checkRevocation(_ revocations: RevocationList) {
        guard let identity = self.identity, revocations.isRevoked(identity) else { return }
        self.close(.policyViolation, "the device was revoked")
    }

    /// Pings, checks liveness and stalls, ticks the protocol's timers. Called by the replica's
    /// ``WebSocketHeartbeats``; false once the connection is done.
    public func heartbeat(now: ContinuousClock.Instant) -> Bool {
        enum Visit {
            case done
            /// Closing: the channel, if its writer cannot get the rest (and the close frame) out.
            case closing(stuck: (any Channel)?)
            case live(ConnectionLiveness.Action, any WebSocketProtocolHandler, (any Channel)?)
        }
        let visit: Visit = self.state.withLock { state in
            guard !state.done, let handler = state.handler else { return .done }
            guard state.closeReason == nil else {
                // A writer waiting on a full socket, or a close frame that cannot get through
                // one, would wait for as long as the client keeps the socket open.
                let stuck = state.wire?.isWaiting == true || state.channel?.isWritable == false
                return .closing(stuck: stuck ? state.channel : nil)
            }
            return .live(state.liveness.tick(now: now), handler, state.channel)
        }
        let (action, handler, channel): (ConnectionLiveness.Action, any WebSocketProtocolHandler, (any Channel)?)
        switch visit {
        case .done:
            return false
        case .closing(let stuck):
            guard let stuck else { return true }
            stuck.close(promise: nil)
            return false
        case .live(let liveAction, let liveHandler, let liveChannel):
            (action, handler, channel) = (liveAction, liveHandler, liveChannel)
        }
        handler.heartbeat()
        switch action {
        case .none:
            break
        case .ping:
            handler.ping()
        case .gone:
            self.close(.goingAway, "no answer to two pings")
            return true  // visited while it closes, in case its socket is full
        case .stalled:
            // The writer waits on the full socket and would never see a close frame through it:
            // the channel is closed under it, which fails the write and ends the connection.
            self.close(.policyViolation, "the connection accepted nothing for \(self.limits.stalledAfter.components.seconds) s")
            channel?.close(promise: nil)
            return false
        }
        return true
    }
}

import NIOCore
import NIOWebSocket
import Synchronization

/// A connection's way to the socket: frames already encoded are written in batches (N writes,
/// one flush), at once when handed over on the event loop with nothing of the connection's
/// still on its way, else with one `execute`; the writer waits only when the channel is full.
///
/// It sits just before NIO's `WebSocketFrameEncoder` (nearer the socket), so what it writes
/// passes anything below (TLS), and what the read handler writes (pongs, the close frame) passes
/// it. Frames written in one batch are contiguous on the wire. Once a close frame has gone
/// out (``CloseWatcher``, just after the encoder, sees it) or the output is closed, nothing
/// more is written (RFC 6455 §5.5.1) and the writer gets ``WireError/closed``.
final class WebSocketWireHandler: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum WireError: Error {
        case closed
    }

    private struct State {
        /// Bytes handed to the event loop that it has not written into the channel yet.
        var submitted = 0
        var writable = true
        var closed = false
        var waiter: CheckedContinuation<Void, any Error>?

        /// Whether the writer may hand over more: the channel below its high-water mark and no
        /// more than ``maxSubmitted`` on their way to it.
        var isReady: Bool { self.closed || (self.writable && self.submitted < WebSocketWireHandler.maxSubmitted) }

        mutating func takeWaiter() -> CheckedContinuation<Void, any Error>? {
            guard self.isReady, let waiter = self.waiter else { return nil }
            self.waiter = nil
            return waiter
        }
    }

    /// Bytes on their way to the channel before the writer waits.
    static let maxSubmitted = 256 << 10

    private let state = Mutex(State())
    private let eventLoop: any EventLoop
    /// Set and used on the event loop only.
    private var context: ChannelHandlerContext?
    /// A close frame went out: on the event loop only.
    private var closeSent = false

    private init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Adds a handler to a pipeline, just before its WebSocket frame encoder (and its close
    /// watcher just after it), on the event loop.
    static func install(on pipeline: ChannelPipeline.SynchronousOperations, eventLoop: any EventLoop) throws -> WebSocketWireHandler {
        let handler = WebSocketWireHandler(eventLoop: eventLoop)
        let encoder = try pipeline.handler(type: WebSocketFrameEncoder.self)
        try pipeline.addHandler(handler, position: .before(encoder))
        try pipeline.addHandler(CloseWatcher(wire: handler), position: .after(encoder))
        return handler
    }

    /// Writes `frames` (whole encoded frames, `bytes` in all) and flushes once: at once on the
    /// event loop when no batch handed over before is still on its way (which it would overtake),
    /// else with one `execute`. Throws once the channel is closed.
    func submit(_ frames: [ByteBuffer], bytes: Int) throws {
        let onEventLoop = self.eventLoop.inEventLoop
        let now = try self.state.withLock { state in
            if state.closed { throw WireError.closed }
            if onEventLoop && state.submitted == 0 { return true }
            state.submitted += bytes
            return false
        }
        if now {
            self.write(frames)
            return
        }
        self.eventLoop.execute {
            self.write(frames)
            let waiter = self.state.withLock { state in
                state.submitted -= bytes
                return state.takeWaiter()
            }
            waiter?.resume()
        }
    }

    /// On the event loop.
    private func write(_ frames: [ByteBuffer]) {
        guard let context = self.context, !self.closeSent else { return }
        for frame in frames { context.write(self.wrapOutboundOut(frame), promise: nil) }
        context.flush()
    }

    /// Whether ``ready()`` would return without waiting; throws once the channel is closed.
    func readyNow() throws -> Bool {
        try self.state.withLock { state in
            if state.closed { throw WireError.closed }
            return state.isReady
        }
    }

    /// Whether the writer is waiting for the channel to drain.
    var isWaiting: Bool { self.state.withLock { $0.waiter != nil } }

    /// Returns when the writer may hand over more; throws once the channel is closed or the
    /// task is cancelled. One waiter at a time (the connection's writer).
    func ready() async throws {
        if try self.readyNow() { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let now: Result<Void, any Error>? = self.state.withLock { state in
                    if state.closed { return .failure(WireError.closed) }
                    if state.isReady { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    precondition(state.waiter == nil, "one writer per connection")
                    state.waiter = continuation
                    return nil
                }
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            let waiter = self.state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Nothing more goes out: the writer's wait ends with ``WireError/closed``.
    private func end() {
        let waiter = self.state.withLock { state in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: WireError.closed)
    }

    /// A close frame passed the encoder: on the event loop.
    fileprivate func closeFrameSent() {
        self.closeSent = true
        self.end()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let writable = context.channel.isWritable
        self.state.withLock { $0.writable = writable }
        if !context.channel.isActive { self.end() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.end()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.end()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .outputClosed { self.end() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        let writable = context.channel.isWritable
        let waiter = self.state.withLock { state in
            state.writable = writable
            return state.takeWaiter()
        }
        waiter?.resume()
        context.fireChannelWritabilityChanged()
    }

    /// Sees the frames the read handler writes (before they are encoded) and tells the wire when one
    /// is a close frame.
    final class CloseWatcher: ChannelOutboundHandler {
        typealias OutboundIn = WebSocketFrame
        typealias OutboundOut = WebSocketFrame

        private let wire: WebSocketWireHandler

        init(wire: WebSocketWireHandler) {
            self.wire = wire
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if self.unwrapOutboundIn(data).opcode == .connectionClose { self.wire.closeFrameSent() }
            context.write(data, promise: promise)
        }
    }
}

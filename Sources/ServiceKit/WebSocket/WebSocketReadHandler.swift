import NIOCore
import NIOWebSocket

/// Reads an upgraded socket's frames on its event loop, with no task per connection: answers
/// pings, runs the close handshake, assembles data frames into messages within the size
/// budget and hands each to the connection serving the socket (``WebSocketConnection``), one
/// at a time and in order, each handled in a short task of its own.
///
/// While a message waits to be handled, the socket is not read (its `read()` is held back), so
/// a client that sends faster than it is served is slowed by TCP, not queued in memory. Once
/// the server's close frame has gone out, data frames are dropped; the socket is closed when
/// the client answers it, or after ``closeTimeout``.
///
/// Its state is the event loop's: ``attach(_:)``, ``detach()`` and ``sendClose(_:reason:)``
/// hop there.
final class WebSocketReadHandler: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// How long the server waits for the client's answer to its close frame.
    static let closeTimeout = TimeAmount.seconds(10)
    /// Messages that may wait before a connection serves the socket; more close it (1008).
    static let maxWaiting = 64

    private let eventLoop: any EventLoop
    private var assembler: WebSocketMessageAssembler
    /// The client's compressed messages are inflated here, when `permessage-deflate` was agreed.
    private let inflater: WebSocketDeflate.Inflater?
    private var context: ChannelHandlerContext?
    private var receiver: WebSocketConnection?
    /// A connection has served the socket (the route did not just refuse it).
    private(set) var isServed = false
    /// Complete messages not handed over yet.
    private var waiting: [WebSocketClientMessage] = []
    private var handling: Task<Void, Never>?
    /// Resumed when the message in hand is handled (``detach()``).
    private var detached: [CheckedContinuation<Void, Never>] = []
    /// A `read()` held back while messages wait.
    private var readHeld = false
    /// Data frames are no longer read: the server's close frame went out or a limit was broken.
    private var inputDone = false
    private var closeSent = false
    private var peerClosed = false
    /// The client's side of the socket is closed (it half-closed, or the socket is gone).
    private var inputClosed = false
    private var closeTimer: Scheduled<Void>?

    init(maxMessageBytes: Int, eventLoop: any EventLoop, inflater: WebSocketDeflate.Inflater? = nil) {
        self.eventLoop = eventLoop
        self.assembler = WebSocketMessageAssembler(maxBytes: maxMessageBytes)
        self.inflater = inflater
    }

    // MARK: The connection's side

    /// Hands the waiting messages, and those that follow, to `connection`.
    func attach(_ connection: WebSocketConnection) {
        self.onLoop { handler in
            handler.isServed = true
            // The connection's own budget, if smaller than the upgrade's frame limit.
            handler.assembler.maxBytes = min(handler.assembler.maxBytes, connection.limits.maxMessageBytes)
            guard handler.context != nil, !handler.peerClosed, !handler.inputClosed, !handler.closeSent else {
                // The socket closed (or is closing) before the connection started.
                connection.inputEnded()
                return
            }
            handler.receiver = connection
            // What arrived before counts against the connection's budget as it would have.
            let now = ContinuousClock.now
            for index in handler.waiting.indices where !connection.admit(at: now) {
                handler.waiting.removeSubrange(index...)
                handler.inputDone = true
                break
            }
            handler.handNext()
        }
    }

    /// Stops handing messages over (the waiting ones are dropped) and returns once the one in
    /// hand, if any, is handled (cancelled first).
    func detach() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            self.onLoop { handler in
                handler.receiver = nil
                handler.inputDone = true  // what follows would wait for a connection that has ended
                handler.waiting = []
                guard let handling = handler.handling else { return continuation.resume() }
                handling.cancel()
                handler.detached.append(continuation)
            }
        }
    }

    /// Sends the close frame unless one went out already, and closes the socket once the client
    /// answers (at once if it closed first), or after ``closeTimeout``. On the event loop.
    func sendClose(_ code: WebSocketErrorCode, reason: String) {
        self.eventLoop.assertInEventLoop()
        guard let context = self.context, !self.closeSent else { return }
        self.closeSent = true
        self.inputDone = true
        // Nothing waiting is handled now; reading goes on, for the client's answer.
        self.waiting = []
        if self.readHeld {
            self.readHeld = false
            context.read()
        }
        var data = context.channel.allocator.buffer(capacity: 2 + reason.utf8.count)
        data.write(webSocketErrorCode: code)
        // A control frame's payload is at most 125 bytes: the code and 123 of the reason, cut at
        // a character.
        var cut = reason
        while cut.utf8.count > 123 { cut.removeLast() }
        data.writeString(cut)
        let written = context.writeAndFlush(self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)))
        let channel = NIOLoopBound(context, eventLoop: context.eventLoop)
        if self.peerClosed {
            written.whenComplete { _ in channel.value.close(promise: nil) }
        } else {
            self.closeTimer = context.eventLoop.scheduleTask(in: Self.closeTimeout) { channel.value.close(promise: nil) }
        }
    }

    private func onLoop(_ body: @escaping @Sendable (WebSocketReadHandler) -> Void) {
        if self.eventLoop.inEventLoop {
            body(self)
        } else {
            self.eventLoop.execute { body(self) }
        }
    }

    // MARK: Reading

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = self.unwrapInboundIn(data)
        guard frame.rsv2 == false, frame.rsv3 == false else {
            return self.broken(.protocolError, "reserved bits set with no extension negotiated")
        }
        // RSV1 marks a compressed message, on its first frame only (RFC 7692 §6), once agreed.
        guard !frame.rsv1 || (self.inflater != nil && (frame.opcode == .text || frame.opcode == .binary)) else {
            return self.broken(
                .protocolError,
                self.inflater == nil ? "reserved bits set with no extension negotiated" : "RSV1 on a frame that cannot carry it"
            )
        }
        switch frame.opcode {
        case .connectionClose:
            self.peerClosed = true
            self.inputDone = true
            if self.closeSent {
                context.close(promise: nil)
            } else {
                self.receiver?.inputEnded()
                self.sendClose(Self.answer(toClose: frame.unmaskedData), reason: "")
            }
        case .ping:
            guard frame.fin, frame.length <= 125 else { return self.broken(.protocolError, "a ping must be one frame of at most 125 bytes") }
            guard !self.closeSent else { return }
            context.writeAndFlush(self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .pong:
            break
        case .text, .binary, .continuation:
            guard !self.inputDone else { return }
            let opcode: WebSocketMessageAssembler.Opcode =
                switch frame.opcode {
                case .text: .text
                case .binary: .binary
                default: .continuation
                }
            var outcome = self.assembler.add(opcode: opcode, data: frame.unmaskedData, fin: frame.fin, compressed: frame.rsv1)
            if case .compressed(let text, let payload) = outcome, let inflater = self.inflater {
                switch inflater.inflate(payload, limit: self.assembler.maxBytes) {
                case .message(let inflated): outcome = WebSocketMessageAssembler.message(text: text, inflated)
                case .tooLarge: outcome = .tooLarge
                case .invalid: return self.broken(.protocolError, "a compressed message that is not valid DEFLATE")
                }
            }
            switch outcome {
            case .partial, .compressed:
                break
            case .message(let message):
                self.arrived(message)
            case .tooLarge:
                self.broken(.messageTooLarge, "messages are at most \(self.assembler.maxBytes) bytes")
            case .outOfOrder:
                self.broken(.protocolError, "a continuation frame out of order")
            case .notUTF8:
                self.broken(.dataInconsistentWithMessage, "a text message that is not UTF-8")
            }
        default:
            self.broken(.protocolError, "a reserved opcode")
        }
    }

    private func arrived(_ message: WebSocketClientMessage) {
        if let receiver = self.receiver {
            guard receiver.admit(at: .now) else {
                self.inputDone = true
                return
            }
        } else if self.waiting.count >= Self.maxWaiting {
            return self.broken(.policyViolation, "more than \(Self.maxWaiting) messages before the connection started")
        }
        self.waiting.append(message)
        self.handNext()
    }

    /// Starts handling the next waiting message, unless one is in hand.
    private func handNext() {
        guard self.handling == nil, let receiver = self.receiver, !self.waiting.isEmpty else { return }
        let message = self.waiting.removeFirst()
        self.handling = Task {
            await receiver.handle(message)
            self.eventLoop.execute { self.handled() }
        }
    }

    private func handled() {
        self.handling = nil
        for continuation in self.detached { continuation.resume() }
        self.detached = []
        self.handNext()
        if self.waiting.isEmpty, self.readHeld, let context = self.context {
            self.readHeld = false
            context.read()
        }
    }

    /// A limit or the protocol was broken: no more data is read, and the connection (or, before
    /// one serves the socket, this handler) closes it with `code`.
    private func broken(_ code: WebSocketErrorCode, _ reason: String) {
        guard !self.inputDone else { return }
        self.inputDone = true
        if let receiver = self.receiver {
            receiver.close(code, reason)
        } else {
            self.sendClose(code, reason: reason)
        }
    }

    func read(context: ChannelHandlerContext) {
        if self.waiting.isEmpty {
            context.read()
        } else {
            self.readHeld = true
        }
    }

    /// The server is shutting down (Hummingbird's graceful shutdown): the connection closes
    /// with 1001, so its client resumes elsewhere.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // The client closed its side without a close frame (the server allows half
            // closure, so this is not `channelInactive`): nothing more comes; the socket is
            // closed.
            self.inputClosed = true
            self.inputDone = true
            self.receiver?.inputEnded()
            context.close(promise: nil)
        } else if event is ChannelShouldQuiesceEvent {
            if let receiver = self.receiver {
                receiver.close(.goingAway, "the server is shutting down")
            } else {
                self.sendClose(.goingAway, reason: "the server is shutting down")
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.inputClosed = true
        self.inputDone = true
        self.closeTimer?.cancel()
        self.closeTimer = nil
        self.receiver?.inputEnded()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// The code answering a client's close frame (RFC 6455 §7.4): a normal close, or a protocol
    /// error when the frame's code is not one a client may send.
    static func answer(toClose data: ByteBuffer) -> WebSocketErrorCode {
        var data = data
        guard data.readableBytes > 0 else { return .normalClosure }
        guard data.readableBytes >= 2, let code = data.readInteger(as: UInt16.self) else { return .protocolError }
        guard String(validating: data.readableBytesView, as: UTF8.self) != nil else { return .protocolError }
        switch code {
        case 1000...1003, 1007...1011, 3000...4999: return .normalClosure
        default: return .protocolError
        }
    }
}

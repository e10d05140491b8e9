import Crypto
import Foundation
public import NIOCore
import NIOPosix
public import NIOWebSocket
import Synchronization

/// The project's own WebSocket client, for the tests and the benchmarks (RFC 6455, `ws://`
/// only): the handshake and the frames are read from one ordered stream of bytes, so what a
/// server sends right after its 101 and its close of the connection arrive in the order they
/// were sent, and a refused upgrade is an error at once (``ClientError/notUpgraded(status:)``).
///
/// HummingbirdWSClient lost them when the server closed the connection while the client's
/// upgrade was still setting up its pipeline (the typed upgrader buffers the frames but not the
/// end of input): the handler then waited forever for frames that had come. A server is allowed
/// to close first (RFC 6455 §7.1.1); browsers, the phone's URLSession and a raw socket read
/// those frames, so the tests' and the benchmarks' client must too.
public enum PlainWebSocket {
    /// The server's close frame.
    public struct Close: Sendable {
        public let closeCode: WebSocketErrorCode
        public let reason: String?
    }

    /// A data message, its fragments joined.
    public enum Message: Sendable {
        case text(String)
        case binary(ByteBuffer)
    }

    public enum ClientError: Error, CustomStringConvertible {
        case badURL(String)
        case notUpgraded(status: String)
        case badHandshake(String)
        case badFrame(String)
        case messageTooLarge(Int)

        public var description: String {
            switch self {
            case .badURL(let url): "not a ws:// URL: \(url)"
            case .notUpgraded(let status): "the server did not upgrade: \(status)"
            case .badHandshake(let why): "bad handshake: \(why)"
            case .badFrame(let why): "bad frame: \(why)"
            case .messageTooLarge(let size): "a message of over \(size) bytes"
            }
        }
    }

    /// Connects to `url`, runs `handler` with the messages coming in and a writer, and returns the
    /// server's close frame: nil when the connection ended without one. When `handler` returns
    /// first, the client sends a normal close and waits (up to `closeTimeout`) for the server's.
    public static func connect(
        url: String,
        bearer token: String? = nil,
        maxMessageBytes: Int = 1 << 24,
        closeTimeout: Duration = .seconds(15),
        _ handler: (Inbound, Outbound) async throws -> Void
    ) async throws -> Close? {
        let (host, port, target) = try Self.parse(url)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, writer in
            let outbound = Outbound(writer: writer, closeSent: ClosingFlag())
            let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            var request = "GET \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            if let token { request += "Authorization: Bearer \(token)\r\n" }
            request += "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n"
            try await writer.write(ByteBuffer(string: request))

            let messages = Inbound(bytes: inbound.makeAsyncIterator(), outbound: outbound, maxMessageBytes: maxMessageBytes)
            try await messages.readHandshake(key: key)
            try await handler(messages, outbound)
            if messages.close == nil, !messages.ended {
                // Our close, then the server's answer (or the end of the connection), for at
                // most closeTimeout.
                let giveUp = channel.channel.eventLoop.scheduleTask(in: TimeAmount(closeTimeout)) {
                    channel.channel.close(promise: nil)
                }
                defer { giveUp.cancel() }
                try? await outbound.close(.normalClosure)
                while (try? await messages.next()) != nil {}
            }
            return messages.close
        }
    }

    /// The `Sec-WebSocket-Accept` a server answers to `key` (RFC 6455 §4.2.2).
    public static func acceptValue(for key: some StringProtocol) -> String {
        Data(Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
    }

    private static func parse(_ url: String) throws -> (host: String, port: Int, target: String) {
        guard url.hasPrefix("ws://") else { throw PlainWebSocket.ClientError.badURL(url) }
        let rest = url.dropFirst("ws://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        var target = String(rest.dropFirst(authority.count))
        if !target.hasPrefix("/") { target = "/" + target }
        let parts = authority.split(separator: ":", maxSplits: 1)
        guard let host = parts.first, let port = parts.count == 2 ? Int(parts[1]) : 80 else { throw PlainWebSocket.ClientError.badURL(url) }
        return (String(host), port, target)
    }

    /// Whether this side sent its close frame: nothing is sent after it (RFC 6455 §5.5.1).
    final class ClosingFlag: Sendable {
        let sent = Mutex(false)
    }

    /// What the client sends: masked frames, as RFC 6455 §5.3 requires of a client. A write to a
    /// connection the server has already closed, or after this side's close frame, is dropped, as
    /// a browser's `send()` is: what the server said before it closed is still read.
    public struct Outbound: Sendable {
        let writer: NIOAsyncChannelOutboundWriter<ByteBuffer>
        let closeSent: ClosingFlag

        public func write(text: String) async throws {
            try await self.write(opcode: .text, data: ByteBuffer(string: text))
        }

        /// One frame, as given: a fragment (`fin` false, then `.continuation`s) or a control frame.
        public func write(opcode: WebSocketOpcode, fin: Bool = true, data: ByteBuffer) async throws {
            let closed = self.closeSent.sent.withLock { sent in
                defer { sent = sent || opcode == .connectionClose }
                return sent
            }
            guard !closed else { return }
            var frame = ByteBuffer()
            frame.writeInteger(UInt8(fin ? 0x80 : 0) | UInt8(webSocketOpcode: opcode))
            let length = data.readableBytes
            switch length {
            case ..<126: frame.writeInteger(UInt8(0x80 | length))
            case ..<65536:
                frame.writeInteger(UInt8(0x80 | 126))
                frame.writeInteger(UInt16(length))
            default:
                frame.writeInteger(UInt8(0x80 | 127))
                frame.writeInteger(UInt64(length))
            }
            let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
            frame.writeBytes(mask)
            frame.writeBytes(data.readableBytesView.enumerated().map { $0.element ^ mask[$0.offset % 4] })
            do {
                try await self.writer.write(frame)
            } catch let error as ChannelError where [.ioOnClosedChannel, .outputClosed, .alreadyClosed].contains(error) {
                // The connection is gone; reading tells the caller so.
            } catch let error as NIOAsyncWriterError where error == .alreadyFinished() {
                // The connection has ended (another task still had something to send).
            }
        }

        public func close(_ code: WebSocketErrorCode, reason: String = "") async throws {
            var data = ByteBuffer()
            data.write(webSocketErrorCode: code)
            data.writeString(reason)
            try await self.write(opcode: .connectionClose, data: data)
        }
    }

    /// The data messages from the server, in order. Pings are answered; the server's close is
    /// answered and ends the sequence (it is then in ``close``). One reader at a time.
    public final class Inbound: AsyncSequence, AsyncIteratorProtocol {
        public typealias Element = Message

        private var bytes: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
        private let outbound: Outbound
        private let maxMessageBytes: Int
        private var buffer = ByteBuffer()
        private var fragments: (opcode: WebSocketOpcode, data: ByteBuffer)?
        /// The server's close frame, once it came.
        public private(set) var close: Close?
        /// The connection's input ended (with or without a close frame).
        public private(set) var ended = false

        init(bytes: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator, outbound: Outbound, maxMessageBytes: Int) {
            self.bytes = bytes
            self.outbound = outbound
            self.maxMessageBytes = maxMessageBytes
        }

        public func makeAsyncIterator() -> Inbound { self }

        /// Reads more bytes; false at the end of input.
        private func fill() async throws -> Bool {
            guard !self.ended, var more = try await self.bytes.next() else {
                self.ended = true
                return false
            }
            // Frames are slices of the buffer: what they used is dropped here, once per read.
            self.buffer.discardReadBytes()
            self.buffer.writeBuffer(&more)
            return true
        }

        func readHandshake(key: String) async throws {
            while true {
                let view = self.buffer.readableBytesView
                if let end = view.firstRange(of: Array("\r\n\r\n".utf8)) {
                    let head = self.buffer.readString(length: end.upperBound - view.startIndex) ?? ""
                    let lines = head.split(separator: "\r\n")
                    let status = String(lines.first ?? "")
                    guard status.split(separator: " ").dropFirst().first == "101" else {
                        throw PlainWebSocket.ClientError.notUpgraded(status: status)
                    }
                    let accept = lines.dropFirst().first { $0.lowercased().hasPrefix("sec-websocket-accept:") }
                        .map { $0.drop { $0 != ":" }.dropFirst().trimmingCharacters(in: .whitespaces) }
                    guard accept == PlainWebSocket.acceptValue(for: key) else {
                        throw PlainWebSocket.ClientError.badHandshake("Sec-WebSocket-Accept \(accept ?? "missing")")
                    }
                    return
                }
                guard self.buffer.readableBytes < 16384 else { throw PlainWebSocket.ClientError.badHandshake("a response head of over 16 KB") }
                guard try await self.fill() else { throw PlainWebSocket.ClientError.badHandshake("the connection ended before the response head") }
            }
        }

        /// The next whole frame, or nil at the end of input.
        private func nextFrame() async throws -> (fin: Bool, opcode: WebSocketOpcode, data: ByteBuffer)? {
            while true {
                if let frame = try self.parseFrame() { return frame }
                guard try await self.fill() else {
                    guard self.buffer.readableBytes == 0 else { throw PlainWebSocket.ClientError.badFrame("the connection ended inside a frame") }
                    return nil
                }
            }
        }

        private func parseFrame() throws -> (fin: Bool, opcode: WebSocketOpcode, data: ByteBuffer)? {
            var peek = self.buffer
            guard let first = peek.readInteger(as: UInt8.self), let second = peek.readInteger(as: UInt8.self) else { return nil }
            var length = Int(second & 0x7F)
            if length == 126 {
                guard let extended = peek.readInteger(as: UInt16.self) else { return nil }
                length = Int(extended)
            } else if length == 127 {
                guard let extended = peek.readInteger(as: UInt64.self) else { return nil }
                guard extended <= UInt64(self.maxMessageBytes) else { throw PlainWebSocket.ClientError.messageTooLarge(self.maxMessageBytes) }
                length = Int(extended)
            }
            guard length <= self.maxMessageBytes else { throw PlainWebSocket.ClientError.messageTooLarge(self.maxMessageBytes) }
            var mask: [UInt8]?
            if second & 0x80 != 0 {
                guard let key = peek.readBytes(length: 4) else { return nil }
                mask = key
            }
            guard var data = peek.readSlice(length: length) else { return nil }
            if let mask {
                data = ByteBuffer(bytes: data.readableBytesView.enumerated().map { $0.element ^ mask[$0.offset % 4] })
            }
            guard let opcode = WebSocketOpcode(encodedWebSocketOpcode: first & 0x0F) else {
                throw PlainWebSocket.ClientError.badFrame("opcode \(first & 0x0F)")
            }
            self.buffer = peek
            return (first & 0x80 != 0, opcode, data)
        }

        public func next() async throws -> Message? {
            guard let (opcode, data) = try await self.nextPayload() else { return nil }
            return opcode == .text ? .text(String(buffer: data)) : .binary(data)
        }

        /// The next data message as its opcode (`.text` or `.binary`) and bytes, without
        /// decoding them: a slice of what was read, for readers that count rather than parse.
        public func nextPayload() async throws -> (WebSocketOpcode, ByteBuffer)? {
            guard self.close == nil else { return nil }
            while let (fin, opcode, data) = try await self.nextFrame() {
                switch opcode {
                case .ping:
                    try await self.outbound.write(opcode: .pong, data: data)
                case .pong:
                    continue
                case .connectionClose:
                    var data = data
                    guard data.readableBytes != 1, data.readableBytes <= 125, fin else {
                        throw PlainWebSocket.ClientError.badFrame("a close frame of \(data.readableBytes) bytes")
                    }
                    // 1005: the frame had no code (RFC 6455 §7.1.5).
                    let code = data.readWebSocketErrorCode() ?? .unknown(1005)
                    let reason = data.readString(length: data.readableBytes) ?? ""
                    self.close = Close(closeCode: code, reason: reason.isEmpty ? nil : reason)
                    // The answer echoes the code (RFC 6455 §5.5.1), unless this side closed
                    // first; the server may be gone already.
                    try? await self.outbound.close(code == .unknown(1005) ? .normalClosure : code)
                    return nil
                case .text, .binary:
                    guard self.fragments == nil else { throw PlainWebSocket.ClientError.badFrame("a new message inside a fragmented one") }
                    if fin { return (opcode, data) }
                    self.fragments = (opcode, data)
                case .continuation:
                    guard var fragments = self.fragments else { throw PlainWebSocket.ClientError.badFrame("a continuation with no message") }
                    var data = data
                    fragments.data.writeBuffer(&data)
                    guard fragments.data.readableBytes <= self.maxMessageBytes else {
                        throw PlainWebSocket.ClientError.messageTooLarge(self.maxMessageBytes)
                    }
                    if fin {
                        self.fragments = nil
                        return (fragments.opcode, fragments.data)
                    }
                    self.fragments = fragments
                default:
                    throw PlainWebSocket.ClientError.badFrame("opcode \(opcode)")
                }
            }
            return nil
        }
    }
}

public import NIOCore
public import NIOWebSocket

/// A socket just upgraded to WebSocket, handed to its route (``WebSocketRoutes``): the route
/// refuses it with a message and a close, or serves it with a ``WebSocketConnection``.
///
/// No task reads it: its frames are read by a channel handler (``WebSocketReadHandler``) that
/// answers pings and the close handshake itself and hands each complete message to the
/// connection that serves the socket, one at a time; until then they wait (and the socket is
/// not read).
public final class UpgradedWebSocket: Sendable {
    let channel: any Channel
    let reader: WebSocketReadHandler
    let wire: WebSocketWireHandler
    /// What was agreed of `permessage-deflate`, if the client offered it.
    let deflate: WebSocketDeflate.Agreement?

    /// The socket's event loop: its connection's writer writes there without waiting when it can.
    public var eventLoop: any EventLoop { self.channel.eventLoop }

    /// Adds the read handler and the wire to an upgraded pipeline (on its event loop).
    static func install(on channel: any Channel, maxMessageBytes: Int, deflate: WebSocketDeflate.Agreement? = nil) throws -> UpgradedWebSocket {
        let pipeline = channel.pipeline.syncOperations
        let wire = try WebSocketWireHandler.install(on: pipeline, eventLoop: channel.eventLoop)
        let inflater = try deflate.map { try WebSocketDeflate.Inflater($0) }
        let reader = WebSocketReadHandler(maxMessageBytes: maxMessageBytes, eventLoop: channel.eventLoop, inflater: inflater)
        try pipeline.addHandler(reader)
        return UpgradedWebSocket(channel: channel, reader: reader, wire: wire, deflate: deflate)
    }

    private init(channel: any Channel, reader: WebSocketReadHandler, wire: WebSocketWireHandler, deflate: WebSocketDeflate.Agreement?) {
        self.channel = channel
        self.reader = reader
        self.wire = wire
        self.deflate = deflate
    }

    /// Sends a text message: before a connection serves the socket (a greeting, or the reason
    /// for a refusal). Throws once the socket is closed.
    public func send(text: ByteBuffer) throws {
        let frame = WebSocketFraming.text(text)
        try self.wire.submit([frame], bytes: frame.readableBytes)
    }

    /// A route that neither served nor closed the socket leaves it to be closed normally.
    func closeUnlessServed() {
        let reader = self.reader
        self.channel.eventLoop.execute { if !reader.isServed { reader.sendClose(.normalClosure, reason: "") } }
    }

    /// Sends the close frame (once: the first code and reason win) after what was sent before
    /// it, and closes the socket when the client answers, or after a few seconds.
    public func close(_ code: WebSocketErrorCode, reason: String) {
        let reader = self.reader
        self.channel.eventLoop.execute { reader.sendClose(code, reason: reason) }
    }
}

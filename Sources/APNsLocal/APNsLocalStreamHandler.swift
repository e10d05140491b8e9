import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 stream of the local APNs server: reads the request, answers it as APNs would (or
/// as a rule says), and records it.
final class APNsLocalStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    /// A request body larger than this is answered 413 without reading further.
    static let maximumBodyBytes = 64 << 10

    private let server: APNsLocalServer
    private var headers: HPACKHeaders?
    private var body: [UInt8] = []
    private var answered = false

    init(server: APNsLocalServer) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.answered else { return }
        switch self.unwrapInboundIn(data) {
        case .headers(let frame):
            self.headers = frame.headers
            if frame.endStream { self.answer(context: context) }
        case .data(let frame):
            if case .byteBuffer(let buffer) = frame.data { self.body += buffer.readableBytesView }
            if self.body.count > Self.maximumBodyBytes {
                self.write(context: context, status: 413, reason: "PayloadTooLarge", timestamp: nil, apnsID: nil, json: nil)
            } else if frame.endStream {
                self.answer(context: context)
            }
        default:
            break
        }
    }

    private func answer(context: ChannelHandlerContext) {
        guard let headers = self.headers else { return }
        let request = APNsLocalRequest(
            method: headers.first(name: ":method") ?? "",
            path: headers.first(name: ":path") ?? "",
            headers: headers.filter { !$0.name.hasPrefix(":") }.map { (name: $0.name.lowercased(), value: $0.value) },
            body: self.body
        )
        let answer = self.server.handle(request)
        let respond = {
            self.write(
                context: context,
                status: answer.status,
                reason: answer.reason,
                timestamp: answer.timestamp,
                apnsID: answer.apnsID,
                json: answer.json
            )
            if answer.goAway { self.goAway(context: context) }
        }
        if answer.delayMilliseconds > 0 {
            context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(answer.delayMilliseconds))) { respond() }
        } else {
            respond()
        }
    }

    private func write(context: ChannelHandlerContext, status: Int, reason: String?, timestamp: Int64?, apnsID: String?, json: [UInt8]?) {
        guard !self.answered else { return }
        self.answered = true
        var headers = HPACKHeaders([(":status", String(status))])
        if let apnsID { headers.add(name: "apns-id", value: apnsID) }
        var body: [UInt8]? = json
        if body == nil, let reason {
            var error: [String: Any] = ["reason": reason]
            if let timestamp { error["timestamp"] = timestamp }
            body = (try? JSONSerialization.data(withJSONObject: error)).map { Array($0) }
        }
        if let body {
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "content-length", value: String(body.count))
            context.write(self.wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
            context.writeAndFlush(self.wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer(bytes: body)), endStream: true))), promise: nil)
        } else {
            context.writeAndFlush(self.wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: nil)
        }
    }

    /// Ends the connection as APNs does: GOAWAY naming the last stream it will answer (this
    /// one) and a JSON reason, then closes it a moment later.
    private func goAway(context: ChannelHandlerContext) {
        guard let connection = context.channel.parent,
            let streamID = try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
        else { return }
        let reason = ByteBuffer(string: #"{"reason":"Shutdown"}"#)
        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: streamID, errorCode: .noError, opaqueData: reason))
        connection.writeAndFlush(frame, promise: nil)
        connection.eventLoop.scheduleTask(in: .milliseconds(200)) { connection.close(promise: nil) }
    }
}

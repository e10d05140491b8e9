import Contracts
import HTTPTypes
public import HummingbirdCore
public import Logging
public import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket
import Synchronization

/// A server's HTTP/1 connection that upgrades to a service's WebSocket routes
/// (``WebSocketRoutes``), and otherwise serves the HTTP router.
///
/// Unlike Hummingbird's WebSocket upgrade, an upgraded socket keeps nothing of its request
/// (no request context, no async channel) and is read by a channel handler: the connection's
/// task is the route's (its writer). A request the upgrade check refuses is answered with the
/// error envelope and closed: 401 `AuthInvalid`/`AuthExpired` or 403 `PermissionDenied` for its
/// token, 404 `NotFound` for a path with no WebSocket route, so a client knows to refresh its
/// token rather than retry.
public struct WebSocketUpgradeChannel: ServerChildChannel, HTTPChannelHandler {
    enum Upgrade: Sendable {
        case webSocket(UpgradedWebSocket, WebSocketUpgradeRequest, WebSocketRoutes.Open)
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        /// An upgrade request that was refused: answered with its error and closed.
        case refused(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, Refusal)
    }

    /// Why an upgrade was refused, and the request's correlation id for its answer.
    struct Refusal: Sendable {
        var error: APIError
        var requestID: String
    }

    public struct Value: ServerChildChannelValue {
        let upgrade: EventLoopFuture<Upgrade>
        public let channel: any Channel
    }

    public let responder: HTTPChannelHandler.Responder
    let routes: WebSocketRoutes
    /// The largest frame and the largest message a client may send.
    let maxMessageBytes: Int
    let http1: HTTP1Channel.Configuration
    let logger: Logger

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // What the upgrade check accepted, for the pipeline's upgrade that follows it, or why
            // it refused.
            let accepted = Mutex<(WebSocketUpgradeRequest, WebSocketRoutes.Open, WebSocketDeflate.Agreement?)?>(nil)
            let refusal = Mutex<Refusal?>(nil)
            let upgrader = NIOTypedWebSocketServerUpgrader<Upgrade>(
                maxFrameSize: self.maxMessageBytes,
                shouldUpgrade: { channel, head in
                    let uri = URI(head.uri)
                    let requestID = RequestIDMiddleware.id(sent: head.headers.first(name: HeaderName.requestID))
                    func refuse(_ error: APIError) -> EventLoopFuture<HTTPHeaders?> {
                        refusal.withLock { $0 = Refusal(error: error, requestID: requestID) }
                        return channel.eventLoop.makeSucceededFuture(nil)
                    }
                    guard let (route, parameters) = self.routes.match(uri.path) else {
                        return refuse(APIError(.notFound, "no WebSocket at \(uri.path.prefix(256))"))
                    }
                    guard let request = try? HTTPRequest(head, secure: false, splitCookie: false) else {
                        return refuse(APIError(.invalidRequest, "the upgrade request's head is not valid HTTP"))
                    }
                    let promise = channel.eventLoop.makePromise(of: HTTPHeaders?.self)
                    promise.completeWithTask {
                        let identity: AccessIdentity
                        let answer: HTTPFields
                        do throws(APIError) {
                            (identity, answer) = try await route.authentication.accept(request.headerFields)
                        } catch {
                            refusal.withLock { $0 = Refusal(error: error, requestID: requestID) }
                            return nil
                        }
                        var logger = self.logger.with(identity)
                        logger[metadataKey: "request_id"] = .string(requestID)
                        let upgrade = WebSocketUpgradeRequest(identity: identity, parameters: parameters, uri: uri, logger: logger)
                        // Compression when the client offers it (every offer, in its order).
                        let offers = head.headers[canonicalForm: "Sec-WebSocket-Extensions"].joined(separator: ",")
                        let deflate = WebSocketDeflate.negotiate(offers.isEmpty ? nil : offers)
                        accepted.withLock { $0 = (upgrade, route.open, deflate) }
                        var headers = HTTPHeaders(answer)
                        headers.replaceOrAdd(name: HeaderName.requestID, value: requestID)
                        if let deflate { headers.replaceOrAdd(name: "Sec-WebSocket-Extensions", value: deflate.response) }
                        return headers
                    }
                    return promise.futureResult
                },
                upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        guard let (request, open, deflate) = accepted.withLock({ $0 }) else { throw ChannelError.inappropriateOperationForState }
                        let socket = try UpgradedWebSocket.install(on: channel, maxMessageBytes: self.maxMessageBytes, deflate: deflate)
                        return .webSocket(socket, request, open)
                    }
                }
            )
            let upgrades = NIOTypedHTTPServerUpgradeConfiguration<Upgrade>(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try pipeline.addHandlers(self.http1.additionalChannelHandlers())
                        try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: self.http1.idleTimeout.map { .init($0) }, logger: logger))
                        let http = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel,
                            configuration: .init(isOutboundHalfClosureEnabled: true)
                        )
                        if let refused = refusal.withLock({ $0 }) { return .refused(http, refused) }
                        return .http(http)
                    }
                }
            )
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<Upgrade>(upgradeConfiguration: upgrades)
            configuration.enablePipelining = false  // HTTP is pipelined by NIOAsyncChannel
            configuration.enableErrorHandling = false  // handled by Hummingbird
            configuration.enableResponseHeaderValidation = false  // HTTPTypes validates them
            configuration.decoderConfiguration.maxHeaderFieldSize = self.http1.httpDecoder.maxHeaderFieldSize
            configuration.decoderConfiguration.maxHeaderListSize = self.http1.httpDecoder.maxHeaderListSize
            configuration.decoderConfiguration.maxHeaderFieldCount = self.http1.httpDecoder.maxHeaderFieldCount
            let upgrade = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            return Value(upgrade: upgrade, channel: channel)
        }
    }

    public func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.upgrade.get() {
            case .http(let http):
                await self.handleHTTP(asyncChannel: http, logger: logger)
            case .refused(let http, let refusal):
                await Self.answer(http, with: refusal, logger: logger)
            case .webSocket(let socket, let request, let open):
                await open(request, socket)
                socket.closeUnlessServed()
            }
        } catch {
            logger.debug("connection ended before its upgrade", metadata: ["error": "\(String(reflecting: error))"])
        }
    }
}

extension WebSocketUpgradeChannel {
    /// Answers a refused upgrade with the error envelope and closes the connection (the request
    /// asked for a protocol switch: nothing more is read from it).
    static func answer(_ http: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, with refusal: Refusal, logger: Logger) async {
        let (head, payload) = Self.closingEnvelope(for: refusal.error, requestID: refusal.requestID, logger: logger)
        do {
            try await http.executeThenClose { _, outbound in
                try await outbound.write(contentsOf: [.head(head), .body(payload), .end(nil)])
            }
        } catch {
            logger.trace("a refused upgrade's answer was not written", metadata: ["error": "\(String(reflecting: error))"])
        }
    }
}

extension WebSocketUpgradeChannel {
    /// The envelope answering `error` on a connection that is then closed: its head
    /// (`Connection: close`, its length, `x-request-id`) and its JSON. Logged as the router
    /// logs refusals.
    static func closingEnvelope(for error: APIError, requestID: String, logger: Logger?) -> (HTTPResponse, ByteBuffer) {
        let (status, body) = ErrorEnvelopeMiddleware.envelope(for: error, requestID: requestID)
        if var logger {
            logger[metadataKey: "request_id"] = .string(requestID)
            ErrorEnvelopeMiddleware.log(error, as: body, logger: logger)
        }
        var (headers, payload) = ErrorEnvelopeMiddleware.parts(of: body)
        headers[.requestID] = requestID
        headers[.connection] = "close"
        headers[.contentLength] = String(payload.readableBytes)
        return (HTTPResponse(status: status, headerFields: headers), payload)
    }

    struct LateUpgrade: Error {}

    /// The HTTP router, except for a request asking for an upgrade that the upgrade handler did
    /// not see (a second request on a keep-alive connection, or one without a valid
    /// `Sec-WebSocket-Key` and `-Version`): NIO's HTTP parser reads nothing more after an
    /// upgrade request, so it gets 400 with the envelope and the connection is closed.
    static func refusingLateUpgrades(_ responder: @escaping HTTPChannelHandler.Responder) -> HTTPChannelHandler.Responder {
        { request, responseWriter, channel in
            guard request.headers[.upgrade] != nil else { return try await responder(request, responseWriter, channel) }
            let error = APIError(
                .invalidRequest,
                "an upgrade must be the first request on its connection, with Sec-WebSocket-Key and Sec-WebSocket-Version: 13"
            )
            let requestID = RequestIDMiddleware.id(sent: request.headers[.requestID])
            let (head, payload) = Self.closingEnvelope(for: error, requestID: requestID, logger: nil)
            var bodyWriter = try await responseWriter.writeHead(head)
            try await bodyWriter.write(payload)
            try await bodyWriter.finish(nil)
            throw LateUpgrade()  // ends the connection
        }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1 that upgrades to `routes` (``WebSocketUpgradeChannel``).
    /// - Parameter maxMessageBytes: the largest frame and message a client may send.
    public static func webSocketUpgrade(
        routes: WebSocketRoutes,
        maxMessageBytes: Int,
        http1: HTTP1Channel.Configuration = .init(),
        logger: Logger
    ) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            WebSocketUpgradeChannel(
                responder: WebSocketUpgradeChannel.refusingLateUpgrades(responder),
                routes: routes,
                maxMessageBytes: maxMessageBytes,
                http1: http1,
                logger: logger
            )
        }
    }
}

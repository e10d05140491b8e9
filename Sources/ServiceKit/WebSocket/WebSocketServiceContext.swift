public import Hummingbird
public import HummingbirdWebSocket
public import NIOCore
import Synchronization

/// The request context of a service's WebSocket routes: carries the identity an upgrade check
/// verified to the connection's handler, and the connection's channel (for its writer).
public struct WebSocketServiceContext: RequestContext, WebSocketRequestContext {
    /// Set by the upgrade check, read by the handler (the context is copied between them).
    final class IdentityBox: Sendable {
        let value = Mutex<AccessIdentity?>(nil)
    }

    public var coreContext: CoreRequestContextStorage
    public let webSocket: WebSocketHandlerReference<Self>
    /// The connection's channel.
    public let channel: any Channel
    private let identityBox = IdentityBox()

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.webSocket = .init()
        self.channel = source.channel
    }

    /// Who is calling, once the upgrade check authenticated the request.
    public var identity: AccessIdentity? {
        get { self.identityBox.value.withLock { $0 } }
        nonmutating set { self.identityBox.value.withLock { $0 = newValue } }
    }
}

import Hummingbird
import HummingbirdWebSocket
import ServiceKit
import Synchronization

/// The request context of `/v1/stream`: carries the identity verified before the upgrade to
/// the WebSocket handler.
struct StreamRequestContext: RequestContext, WebSocketRequestContext {
    /// Set by the upgrade check, read by the handler (the context is copied between them).
    final class IdentityBox: Sendable {
        let value = Mutex<AccessIdentity?>(nil)
    }

    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    let identity = IdentityBox()

    init(source: Source) {
        self.coreContext = .init(source: source)
        self.webSocket = .init()
    }
}

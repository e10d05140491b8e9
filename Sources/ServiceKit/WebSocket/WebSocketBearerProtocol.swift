import Foundation

/// An access token carried in `Sec-WebSocket-Protocol`, for browsers: they cannot set
/// `Authorization` on a WebSocket, and a token in the URL can end up in history, logs and
/// referrers. The browser offers two subprotocols, the application's and the token:
///
///     new WebSocket(url, ["swarmdeck.v1", "swarmdeck.bearer." + accessToken])
///
/// and the server selects ``application`` (a browser fails a handshake whose answer selects none
/// of the protocols it offered). The token entry is never echoed. A JWT is base64url segments
/// joined by dots, all of them characters a subprotocol token may hold.
public struct WebSocketBearerProtocol: Sendable, Equatable {
    /// The subprotocol the server selects.
    public static let application = "swarmdeck.v1"
    /// The prefix of the entry that carries the token.
    public static let bearerPrefix = "swarmdeck.bearer."

    /// The token offered, if any.
    public var token: String?
    /// Whether ``application`` was offered (and so must be selected in the answer).
    public var offersApplication: Bool

    /// Reads the offered subprotocols from every `Sec-WebSocket-Protocol` field value (each a
    /// comma-separated list). Only the first token entry counts.
    public init(headerValues: [String]) {
        self.token = nil
        self.offersApplication = false
        for value in headerValues {
            for entry in value.split(separator: ",") {
                let name = entry.trimmingCharacters(in: .whitespaces)
                if name == Self.application {
                    self.offersApplication = true
                } else if self.token == nil, name.hasPrefix(Self.bearerPrefix) {
                    let token = name.dropFirst(Self.bearerPrefix.count)
                    if !token.isEmpty { self.token = String(token) }
                }
            }
        }
    }
}

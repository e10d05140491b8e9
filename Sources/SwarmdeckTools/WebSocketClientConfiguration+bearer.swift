import HTTPTypes
public import HummingbirdWSClient

extension WebSocketClientConfiguration {
    /// A configuration that sends `token` as `Authorization: Bearer` on the upgrade (the
    /// services take no token from a URL).
    public static func bearer(_ token: String, maxFrameSize: Int = 1 << 14) -> WebSocketClientConfiguration {
        var configuration = WebSocketClientConfiguration(maxFrameSize: maxFrameSize)
        if !token.isEmpty { configuration.additionalHeaders[.authorization] = "Bearer \(token)" }
        return configuration
    }
}

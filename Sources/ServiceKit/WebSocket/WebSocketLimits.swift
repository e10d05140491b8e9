/// The budgets of one WebSocket connection, and what happens past each.
public struct WebSocketLimits: Sendable {
    /// How the server checks that a client is still there.
    public enum Liveness: Sendable {
        /// The protocol pings with a message of its own every ``WebSocketLimits/pingInterval``;
        /// any client message answers. Two pings unanswered for a full interval close the
        /// connection (1001).
        case clientMessages
        /// The server sends WebSocket ping frames every ``WebSocketLimits/pingInterval`` (their
        /// pongs come from the client's WebSocket stack and are not seen here), which keeps
        /// proxies from timing the connection out. A dead peer is noticed only once the socket
        /// stops accepting (``WebSocketLimits/stalledAfter`` closes it) or TCP gives up.
        case pingFrames
    }

    /// Largest client message, assembled from its frames; larger closes the connection (1009).
    public var maxMessageBytes: Int
    /// Client messages per 10 seconds; more closes the connection (1008).
    public var maxMessagesPer10Seconds: Int
    /// Invalid client messages (the protocol says which) before the connection is closed (1008).
    public var maxInvalidMessages: Int
    public var pingInterval: Duration
    public var liveness: Liveness
    /// How long a write may wait for the socket before the connection is closed (1008).
    public var stalledAfter: Duration

    public init(
        maxMessageBytes: Int,
        maxMessagesPer10Seconds: Int,
        maxInvalidMessages: Int = 10,
        pingInterval: Duration,
        liveness: Liveness,
        stalledAfter: Duration
    ) {
        self.maxMessageBytes = maxMessageBytes
        self.maxMessagesPer10Seconds = maxMessagesPer10Seconds
        self.maxInvalidMessages = maxInvalidMessages
        self.pingInterval = pingInterval
        self.liveness = liveness
        self.stalledAfter = stalledAfter
    }
}

/// How to connect to NATS.
public struct NATSConfiguration: Sendable, Hashable {
    /// Server URLs, e.g. `nats://127.0.0.1:4222`; several for a cluster.
    public var servers: [String]
    /// The connection name shown by the server's monitoring.
    public var name: String
    /// Write each publish at once instead of letting the library group writes for ~1 ms.
    /// Turn on for latency-sensitive connections (control, approvals, responders).
    public var sendAsap: Bool
    /// Pause between reconnect attempts, in milliseconds.
    public var reconnectWaitMilliseconds: Int
    /// Bytes of publishes buffered while reconnecting; past it a publish fails.
    public var reconnectBufferBytes: Int
    /// Timeout of the initial connect, in milliseconds.
    public var connectTimeoutMilliseconds: Int
    /// Keep retrying in the background when the server is down at start, instead of failing.
    public var retryOnFailedConnect: Bool

    public init(
        servers: [String],
        name: String,
        sendAsap: Bool = false,
        reconnectWaitMilliseconds: Int = 250,
        reconnectBufferBytes: Int = 8 << 20,
        connectTimeoutMilliseconds: Int = 2000,
        retryOnFailedConnect: Bool = false
    ) {
        self.servers = servers
        self.name = name
        self.sendAsap = sendAsap
        self.reconnectWaitMilliseconds = reconnectWaitMilliseconds
        self.reconnectBufferBytes = reconnectBufferBytes
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.retryOnFailedConnect = retryOnFailedConnect
    }
}

/// Something that happened to a connection.
public enum NATSConnectionEvent: Sendable, Hashable {
    /// The first connection succeeded after the server was unreachable at start.
    case connected
    case disconnected
    case reconnected
    case closed
    /// An asynchronous error, e.g. a subscription entering the slow-consumer state.
    case error(String)
}

/// The state of a connection.
public enum NATSConnectionStatus: Sendable, Hashable {
    case connecting
    case connected
    case reconnecting
    case draining
    case closed
}

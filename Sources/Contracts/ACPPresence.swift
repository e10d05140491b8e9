/// Which ACP threads one `/v1/acp` connection of a device follows live, announced by
/// stream-fanout (JSON on ``Subjects/acpPresence(tenant:)``, core NATS) whenever it changes
/// and every few seconds while it lasts. The notifier sends a thread's silent push only to
/// devices that do not follow it live.
public struct ACPPresence: Codable, Sendable, Equatable {
    public var tenant: String
    /// The access token's subject: the device.
    public var device: String
    /// One per WebSocket connection (a device may hold several).
    public var connection: String
    /// The threads the connection follows live; empty when it ended.
    public var threads: [String]
    /// How long this announcement holds unless another replaces it (milliseconds); 0 when the
    /// connection ended.
    public var ttlMilliseconds: Int64

    /// The most threads one announcement carries (a connection follows at most 100).
    public static let maxThreads = 100

    public init(tenant: String, device: String, connection: String, threads: [String], ttlMilliseconds: Int64) {
        self.tenant = tenant
        self.device = device
        self.connection = connection
        self.threads = threads
        self.ttlMilliseconds = ttlMilliseconds
    }
}

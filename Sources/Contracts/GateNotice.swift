/// An approval gate that opened, published by approvals (JSON on
/// ``Subjects/gateOpened(tenant:)``, JetStream) for the notifier: what a push needs to say and
/// to open the right screen, nothing secret (no tool input).
public struct GateNotice: Codable, Sendable, Equatable {
    public var tenant: String
    public var gateId: String
    public var swarmId: String
    public var agentId: String
    public var summary: String
    /// low, medium, high or critical.
    public var risk: String
    /// Milliseconds since the epoch.
    public var requestedAt: Int64
    public var expiresAt: Int64
    public var webUrl: String
    /// The ACP thread whose `session/request_permission` opened the gate, if one did: the push
    /// lets the app open that thread.
    public var threadId: String?

    public init(
        tenant: String,
        gateId: String,
        swarmId: String,
        agentId: String,
        summary: String,
        risk: String,
        requestedAt: Int64,
        expiresAt: Int64,
        webUrl: String,
        threadId: String? = nil
    ) {
        self.tenant = tenant
        self.gateId = gateId
        self.swarmId = swarmId
        self.agentId = agentId
        self.summary = summary
        self.risk = risk
        self.requestedAt = requestedAt
        self.expiresAt = expiresAt
        self.webUrl = webUrl
        self.threadId = threadId
    }
}

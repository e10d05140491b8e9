/// A service's request that approvals open a gate for one of the agents it is (JSON, NATS
/// request/reply on ``Subjects/serviceGateRequests``): pipeline-runner's stage gates. The
/// gate's outcome reaches the agent's command queue like any gate's (action `gate`).
public struct ServiceGateRequest: Codable, Sendable, Equatable {
    public var tenant: String
    public var swarmId: String
    public var agentId: String
    /// Unique per agent: a repeated request answers with the gate it opened.
    public var idempotencyKey: String
    public var summary: String
    /// low, medium, high or critical.
    public var risk: String
    public var tool: String?
    public var expiresInSeconds: Int?

    public init(
        tenant: String,
        swarmId: String,
        agentId: String,
        idempotencyKey: String,
        summary: String,
        risk: String = "medium",
        tool: String? = nil,
        expiresInSeconds: Int? = nil
    ) {
        self.tenant = tenant
        self.swarmId = swarmId
        self.agentId = agentId
        self.idempotencyKey = idempotencyKey
        self.summary = summary
        self.risk = risk
        self.tool = tool
        self.expiresInSeconds = expiresInSeconds
    }
}

/// Approvals' answer to a ``ServiceGateRequest``: the gate (new or the one its key opened), or
/// why none was opened and whether asking again may succeed.
public struct ServiceGateReply: Codable, Sendable, Equatable {
    public var gateId: String?
    /// pending, approved, rejected, expired or cancelled.
    public var status: String?
    public var error: String?
    public var retryable: Bool

    public init(gateId: String? = nil, status: String? = nil, error: String? = nil, retryable: Bool = false) {
        self.gateId = gateId
        self.status = status
        self.error = error
        self.retryable = retryable
    }
}

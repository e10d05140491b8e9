/// A change of an incident, published by health-monitor (JSON on
/// ``Subjects/incidentChanged(tenant:)``, JetStream, message id `incident-<id>-<status>`) for
/// the notifier: what a push needs to say and to open the right screen, nothing secret.
public struct IncidentNotice: Codable, Sendable, Equatable {
    public var tenant: String
    public var incidentId: String
    /// The rule that raised it: `context_near_capacity`, `redundancy_spike`,
    /// `skill_failure_spike`, `skill_latency_high`, `agent_stuck`, `tool_loop`,
    /// `swarm_error_rate`, `runaway_cost` or `critical_error`.
    public var rule: String
    /// firing or resolved.
    public var status: String
    /// info, warning or critical.
    public var severity: String
    public var summary: String
    public var swarmId: String?
    public var agentId: String?
    /// The session a context incident is about, the skill a skill incident is about (absent in
    /// notices of before they were carried).
    public var sessionId: String?
    public var skillId: String?
    /// Milliseconds since the epoch: when it started firing, and when it resolved.
    public var firedAt: Int64
    public var resolvedAt: Int64?
    public var webUrl: String

    public init(
        tenant: String,
        incidentId: String,
        rule: String,
        status: String,
        severity: String,
        summary: String,
        swarmId: String?,
        agentId: String?,
        sessionId: String? = nil,
        skillId: String? = nil,
        firedAt: Int64,
        resolvedAt: Int64?,
        webUrl: String
    ) {
        self.tenant = tenant
        self.incidentId = incidentId
        self.rule = rule
        self.status = status
        self.severity = severity
        self.summary = summary
        self.swarmId = swarmId
        self.agentId = agentId
        self.sessionId = sessionId
        self.skillId = skillId
        self.firedAt = firedAt
        self.resolvedAt = resolvedAt
        self.webUrl = webUrl
    }
}

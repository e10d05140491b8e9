/// What health-monitor answers on ``Subjects/healthSummary`` (JSON): a tenant's active
/// incidents and rollups, for control-api's overview and agent detail (seed 000 §12.1, §12.3).
public struct HealthSummary: Codable, Sendable, Equatable {
    /// The question: the tenant, and an agent (of a swarm) whose context and skills to include.
    public struct Request: Codable, Sendable, Equatable {
        public var tenant: String
        public var agentId: String?
        public var swarmId: String?

        public init(tenant: String, agentId: String? = nil, swarmId: String? = nil) {
            self.tenant = tenant
            self.agentId = agentId
            self.swarmId = swarmId
        }
    }

    public struct Incident: Codable, Sendable, Equatable {
        public var incidentId: String
        public var rule: String
        public var severity: String
        public var summary: String
        public var swarmId: String?
        public var agentId: String?
        /// Milliseconds since the epoch.
        public var firedAt: Int64
        public var acknowledged: Bool
        public var webUrl: String

        public init(
            incidentId: String,
            rule: String,
            severity: String,
            summary: String,
            swarmId: String?,
            agentId: String?,
            firedAt: Int64,
            acknowledged: Bool,
            webUrl: String
        ) {
            self.incidentId = incidentId
            self.rule = rule
            self.severity = severity
            self.summary = summary
            self.swarmId = swarmId
            self.agentId = agentId
            self.firedAt = firedAt
            self.acknowledged = acknowledged
            self.webUrl = webUrl
        }
    }

    /// One session's context.
    public struct Context: Codable, Sendable, Equatable {
        public var sessionId: String
        public var agentId: String
        public var percentUsed: Double
        public var redundancyScore: Double
        public var warnings: [String]

        public init(sessionId: String, agentId: String, percentUsed: Double, redundancyScore: Double, warnings: [String]) {
            self.sessionId = sessionId
            self.agentId = agentId
            self.percentUsed = percentUsed
            self.redundancyScore = redundancyScore
            self.warnings = warnings
        }
    }

    /// One skill of one swarm, over the last hour.
    public struct Skill: Codable, Sendable, Equatable {
        public var skillId: String
        public var name: String
        public var swarmId: String
        public var calls: Int
        public var errorRate: Double
        public var p95LatencyMs: Double?

        public init(skillId: String, name: String, swarmId: String, calls: Int, errorRate: Double, p95LatencyMs: Double?) {
            self.skillId = skillId
            self.name = name
            self.swarmId = swarmId
            self.calls = calls
            self.errorRate = errorRate
            self.p95LatencyMs = p95LatencyMs
        }
    }

    /// One swarm over the last five minutes.
    public struct Swarm: Codable, Sendable, Equatable {
        public var swarmId: String
        /// healthy, degraded or critical.
        public var status: String
        public var errorRate: Double
        public var eventsPerMinute: Double
        public var stuckAgents: Int

        public init(swarmId: String, status: String, errorRate: Double, eventsPerMinute: Double, stuckAgents: Int) {
            self.swarmId = swarmId
            self.status = status
            self.errorRate = errorRate
            self.eventsPerMinute = eventsPerMinute
            self.stuckAgents = stuckAgents
        }
    }

    public var activeIncidents: [Incident]
    /// The highest context use of any active session, 0–100; nil with no session.
    public var contextRisk: Double?
    /// Failed calls over all calls of the last hour, every skill; nil with no calls.
    public var skillFailureRate: Double?
    public var swarms: [Swarm]
    /// With an agent in the request: its sessions' context, and its swarm's skills worst first.
    public var agentContext: [Context]?
    public var agentSkills: [Skill]?

    public init(
        activeIncidents: [Incident],
        contextRisk: Double?,
        skillFailureRate: Double?,
        swarms: [Swarm],
        agentContext: [Context]? = nil,
        agentSkills: [Skill]? = nil
    ) {
        self.activeIncidents = activeIncidents
        self.contextRisk = contextRisk
        self.skillFailureRate = skillFailureRate
        self.swarms = swarms
        self.agentContext = agentContext
        self.agentSkills = agentSkills
    }
}

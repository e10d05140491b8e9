/// One agent's command channel, from a verified agent session token: the tenant, swarm and
/// agent come from here, never from a request.
public struct AgentSessionIdentity: Sendable, Hashable {
    public var tenant: String
    /// The session id (the token's subject; ending the session revokes it).
    public var session: String
    public var swarm: String
    public var agent: String

    public init(tenant: String, session: String, swarm: String, agent: String) {
        self.tenant = tenant
        self.session = session
        self.swarm = swarm
        self.agent = agent
    }
}

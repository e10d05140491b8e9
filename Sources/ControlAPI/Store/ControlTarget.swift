/// What a control request addresses: one agent, a swarm's agents, or a worker.
enum ControlTarget: String, Sendable, Codable {
    case swarm
    case agent
    case worker
}

/// Identifiers that belong to services, which no agent may use: ingest's HTTP API refuses
/// events in them and control-api refuses agent sessions in them, so an agent holding its
/// tenant's ingest key can neither pose as a service's agents nor take their message ids first.
public enum ReservedIDs {
    /// The swarm pipeline-runner's pipelines are the agents of.
    public static let pipelineSwarm = "pipelines"

    /// The prefix of the message ids services give their events (pipeline-runner's).
    public static let serviceMsgIDPrefix = "svc-"

    /// Why an agent may not post an event with these ids; nil when it may.
    public static func agentProblem(swarm: String, msgID: String) -> String? {
        if swarm == Self.pipelineSwarm { return "swarm \(Self.pipelineSwarm) is pipeline-runner's" }
        if msgID.hasPrefix(Self.serviceMsgIDPrefix) { return "msgIds starting \(Self.serviceMsgIDPrefix) are reserved for services" }
        return nil
    }
}

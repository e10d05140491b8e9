public import ServiceKit

/// What `swarmdeckd` does beside running a service: describe the services' configuration and
/// write what deployment needs, both from the registry.
public enum SwarmdeckdTools {
    /// `swarmdeckd config …` and `swarmdeckd deploy …`.
    public static let all: [ServiceTool] = [
        ServiceTool(name: "config", summary: "the services' configuration keys (config keys, config docs)") { ConfigCommand.main($0) },
        ServiceTool(name: "deploy", summary: "what deployment needs, from the registry (deploy print, deploy write)") { DeployCommand.main($0) },
    ]
}

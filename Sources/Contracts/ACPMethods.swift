/// The ACP (Agent Client Protocol) methods the services read by name.
public enum ACPMethods {
    /// What a person's device may send an agent: a prompt and a cancel (besides answers to the
    /// agent's requests). Reconfiguring the agent (`session/new` with MCP servers to start,
    /// `session/set_mode`, `initialize`, `authenticate`) is its connector's business.
    public static let fromDevices: Set<String> = ["session/prompt", "session/cancel"]
    /// The agent asks its client to let a tool run.
    public static let requestPermission = "session/request_permission"
}

/// The ACP (Agent Client Protocol) methods the services read by name.
public enum ACPMethods {
    /// What a person's device may send an agent: a prompt and a cancel (besides answers to the
    /// agent's requests). Reconfiguring the agent (`session/new` with MCP servers to start,
    /// `session/set_mode`, `initialize`, `authenticate`) is its connector's business.
    public static let fromDevices: Set<String> = ["session/prompt", "session/cancel"]
    /// The agent asks its client to let a tool run.
    public static let requestPermission = "session/request_permission"

    /// The option an answer to a permission request selects
    /// (`{"result":{"outcome":{"outcome":"selected","optionId":…}}}`), or nil (cancelled, an
    /// error, another shape).
    public static func selectedOption(in answer: [String: Any]) -> String? {
        let outcome = (answer["result"] as? [String: Any])?["outcome"] as? [String: Any]
        return outcome?["outcome"] as? String == "selected" ? outcome?["optionId"] as? String : nil
    }
}

/// What a command running under `swarmdeck agent run` and its connector say over the gate
/// socket (`SWARMDECK_GATE_SOCKET`): one request line, one answer line, JSON.
struct GateRelayRequest: Codable, Sendable {
    /// The caller's idempotency key (a hook's `tool_use_id`): asking again finds the same gate.
    var idempotencyKey: String
    var summary: String
    var risk: String?
    var tool: String?
    /// The tool's input, as JSON text (approvals redacts and bounds it).
    var toolInput: String?
    var expiresInSeconds: Int?
    /// hook, mcp, acp or api.
    var source: String
}

/// How the gate ended, or why there is no answer (`error`: the caller fails closed).
struct GateRelayReply: Codable, Sendable, Equatable {
    var gateId: String?
    /// approved, rejected, expired or cancelled.
    var status: String?
    var allow: Bool?
    var reason: String?
    var optionId: String?
    var decidedBy: String?
    var error: String?

    static func failure(_ message: String) -> GateRelayReply {
        GateRelayReply(error: message)
    }
}

extension BusEventKind {
    /// The `type` of the client frame (seed 000 §7.2).
    public var frameType: String {
        switch self {
        case .trace: "traceEvent"
        case .log: "log"
        case .metric: "metric"
        case .state: "state"
        case .toolCall: "toolCall"
        case .usage: "usage"
        case .acp: "acp"
        case .approval: "approvalGate"
        case .incident: "incident"
        case .unspecified, .UNRECOGNIZED: "unknown"
        }
    }
}

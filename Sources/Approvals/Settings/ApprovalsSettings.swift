public import ServiceKit

/// Approvals' own configuration keys and their values.
public struct ApprovalsSettings: ServiceSettings {
    /// The Postgres schema approvals owns: gates, their audit trail, the outbox.
    @Setting("approvals.schema", "the Postgres schema approvals owns", default: "approvals", .identifier)
    public var schema: String
    /// A gate's lifetime when the agent gives none (at most ``maxExpirySeconds``).
    @Setting(
        "approvals.default-expiry-seconds",
        "a gate's lifetime when its agent gives none (then it expires with approvals.expiry-outcome); at most approvals.max-expiry-seconds",
        default: 900,
        in: 1...86_400
    )
    var defaultExpirySeconds: Int
    /// The longest lifetime an agent may ask for.
    @Setting("approvals.max-expiry-seconds", "the longest lifetime an agent may give a gate (400 past it)", default: 86_400, in: 1...86_400)
    var maxExpirySeconds: Int
    /// Whether an expired gate lets its agent go on (false: fail closed).
    @Setting(
        "approvals.expiry-outcome",
        "what an expired gate tells its agent: reject (fail closed) or approve; a gate with options (ACP) is always cancelled",
        default: false,
        SettingFormat(expected: "approve or reject", parse: { ["approve": true, "reject": false][$0] }, render: { $0 ? "approve" : "reject" })
    )
    var expiryAllows: Bool
    /// The shortest reason a rejection may carry (seed 000 §12.5).
    @Setting("approvals.min-reject-reason", "characters a rejection's reason needs at least (400 below)", default: 10, in: 0...500)
    var minRejectReason: Int
    /// Pending gates one agent may have; past it opening one answers 429.
    @Setting("approvals.max-pending-per-agent", "pending gates one agent may have (429 past it)", default: 20, in: 1...10_000)
    var maxPendingPerAgent: Int
    /// Pending gates one tenant may have; past it opening one answers 429.
    @Setting("approvals.max-pending-per-tenant", "pending gates one tenant may have (429 past it)", default: 1000, in: 1...1_000_000)
    var maxPendingPerTenant: Int
    /// Gates one tenant may open per minute.
    @Setting("approvals.opens-per-minute", "gates one tenant may open per minute (429 past it)", default: 600, in: 1...1_000_000)
    var opensPerMinute: Int
    /// Decisions one person may send per minute.
    @Setting("approvals.decisions-per-minute", "decisions one person may send per minute (429 past it)", default: 120, in: 1...100_000)
    var decisionsPerMinute: Int
    /// The stored tool input's size (after redaction); larger is cut.
    @Setting(
        "approvals.max-input-bytes",
        "bytes of a tool's input a gate keeps, after redaction (larger is cut and marked toolInputTruncated)",
        default: 16_384,
        in: 256...(1 << 20)
    )
    var maxInputBytes: Int
    /// The base of the `webUrl` deep links.
    @Setting(.webBaseURL("approvals", "of gates"))
    var webBaseURL: String
    /// Peers whose `X-Forwarded-For` names the client (the edge); `*` trusts every peer.
    @Setting(.trustedProxies("approvals"))
    var trustedProxies: Set<String>

    public init() {}

    public mutating func validate() throws(ServiceKitError) {
        try self.$defaultExpirySeconds.check(self.defaultExpirySeconds, in: 1...self.maxExpirySeconds)
    }
}

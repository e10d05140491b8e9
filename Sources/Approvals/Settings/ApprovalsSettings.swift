public import Configuration
public import ServiceKit

/// Approvals' own configuration keys and their values.
public struct ApprovalsSettings: ServiceSettings {
    /// The Postgres schema approvals owns: gates, their audit trail, the outbox.
    public var schema: String
    /// A gate's lifetime when the agent gives none.
    var defaultExpirySeconds: Int
    /// The longest lifetime an agent may ask for.
    var maxExpirySeconds: Int
    /// Whether an expired gate lets its agent go on (false: fail closed).
    var expiryAllows: Bool
    /// The shortest reason a rejection may carry (seed 000 §12.5).
    var minRejectReason: Int
    /// Pending gates one agent may have; past it opening one answers 429.
    var maxPendingPerAgent: Int
    /// Pending gates one tenant may have; past it opening one answers 429.
    var maxPendingPerTenant: Int
    /// Gates one tenant may open per minute.
    var opensPerMinute: Int
    /// Decisions one person may send per minute.
    var decisionsPerMinute: Int
    /// The stored tool input's size (after redaction); larger is cut.
    var maxInputBytes: Int
    /// The base of the `webUrl` deep links.
    var webBaseURL: String
    /// Peers whose `X-Forwarded-For` names the client (the edge); `*` trusts every peer.
    var trustedProxies: Set<String>

    public static let keys: [SettingKey] = [
        .approvalsSchema, .defaultExpirySeconds, .maxExpirySeconds, .expiryOutcome, .minRejectReason, .maxPendingPerAgent, .maxPendingPerTenant,
        .opensPerMinute, .decisionsPerMinute, .maxInputBytes, .approvalsWebBaseURL, .approvalsTrustedProxies,
    ]

    public init(reader: ConfigReader) throws(ServiceKitError) {
        self.schema = try reader.identifierSetting(.approvalsSchema)
        self.maxExpirySeconds = try reader.setting(.maxExpirySeconds, in: 1...86_400)
        self.defaultExpirySeconds = try reader.setting(.defaultExpirySeconds, in: 1...self.maxExpirySeconds)
        self.expiryAllows = try reader.setting(.expiryOutcome, expected: "approve or reject") { text in
            switch text {
            case "approve": true
            case "reject": false
            default: nil
            }
        }
        self.minRejectReason = try reader.setting(.minRejectReason, in: 0...500)
        self.maxPendingPerAgent = try reader.setting(.maxPendingPerAgent, in: 1...10_000)
        self.maxPendingPerTenant = try reader.setting(.maxPendingPerTenant, in: 1...1_000_000)
        self.opensPerMinute = try reader.setting(.opensPerMinute, in: 1...1_000_000)
        self.decisionsPerMinute = try reader.setting(.decisionsPerMinute, in: 1...100_000)
        self.maxInputBytes = try reader.setting(.maxInputBytes, in: 256...(1 << 20))
        self.webBaseURL = try reader.baseURLSetting(.approvalsWebBaseURL)
        self.trustedProxies = Set(try reader.setting(.approvalsTrustedProxies).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
    }
}

extension SettingKey {
    static let approvalsSchema = SettingKey("approvals.schema", "the Postgres schema approvals owns", default: "approvals")
    static let defaultExpirySeconds = SettingKey(
        "approvals.default-expiry-seconds",
        "a gate's lifetime when its agent gives none (then it expires with approvals.expiry-outcome)",
        default: "900"
    )
    static let maxExpirySeconds = SettingKey(
        "approvals.max-expiry-seconds",
        "the longest lifetime an agent may give a gate (400 past it)",
        default: "86400"
    )
    static let expiryOutcome = SettingKey(
        "approvals.expiry-outcome",
        "what an expired gate tells its agent: reject (fail closed) or approve; a gate with options (ACP) is always cancelled",
        default: "reject"
    )
    static let minRejectReason = SettingKey(
        "approvals.min-reject-reason",
        "characters a rejection's reason needs at least (400 below)",
        default: "10"
    )
    static let maxPendingPerAgent = SettingKey("approvals.max-pending-per-agent", "pending gates one agent may have (429 past it)", default: "20")
    static let maxPendingPerTenant = SettingKey(
        "approvals.max-pending-per-tenant",
        "pending gates one tenant may have (429 past it)",
        default: "1000"
    )
    static let opensPerMinute = SettingKey("approvals.opens-per-minute", "gates one tenant may open per minute (429 past it)", default: "600")
    static let decisionsPerMinute = SettingKey(
        "approvals.decisions-per-minute",
        "decisions one person may send per minute (429 past it)",
        default: "120"
    )
    static let maxInputBytes = SettingKey(
        "approvals.max-input-bytes",
        "bytes of a tool's input a gate keeps, after redaction (larger is cut and marked toolInputTruncated)",
        default: "16384"
    )
    static let approvalsWebBaseURL = SettingKey("approvals.web-base-url", "base of the webUrl deep links of gates", default: "http://127.0.0.1:8080")
    static let approvalsTrustedProxies = SettingKey(
        "approvals.trusted-proxies",
        "comma-separated peers whose X-Forwarded-For names the client (the edge); * trusts every peer",
        default: "127.0.0.1,::1"
    )
}

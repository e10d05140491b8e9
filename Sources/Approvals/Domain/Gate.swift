import Foundation

/// Where a gate is in its life. Only `pending` changes, once.
enum GateStatus: String, Sendable, CaseIterable {
    case pending, approved, rejected, expired, cancelled

    var isSettled: Bool { self != .pending }
}

/// An answer a gate offers (ACP's permission options).
struct GateOption: Codable, Sendable, Equatable {
    enum Kind: String, Codable, Sendable {
        case allowOnce = "allow_once"
        case allowAlways = "allow_always"
        case rejectOnce = "reject_once"
        case rejectAlways = "reject_always"

        var allows: Bool { self == .allowOnce || self == .allowAlways }
    }

    var optionId: String
    var name: String
    var kind: Kind
}

/// One approval gate as stored.
struct Gate: Sendable, Equatable {
    var tenant: String
    var id: String
    var swarm: String
    var agent: String
    var idempotencyKey: String
    var source: String
    var summary: String
    var risk: String
    var recommendedAction: String?
    var tool: String?
    /// The tool's input, redacted and bounded, as JSON text.
    var toolInput: String?
    var toolInputTruncated: Bool
    var options: [GateOption]
    var status: GateStatus
    var requestedAt: Date
    var expiresAt: Date
    var settlement: Settlement?

    /// How a gate was settled: by a person, by expiry, or by its agent's termination.
    struct Settlement: Sendable, Equatable {
        var receiptID: String
        var decidedAt: Date
        var decidedBy: String
        var reason: String?
        var optionID: String?
        /// Whether the agent may go on.
        var allow: Bool
        var decisionID: String?
    }
}

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
    /// How many values in the summary and the tool's input were masked as credentials.
    var maskedValues: Int
    var options: [GateOption]
    var status: GateStatus
    var requestedAt: Date
    var expiresAt: Date
    var settlement: Settlement?
    /// Set for a gate an ACP permission request opened: where its answer goes.
    var acp: ACPOrigin?

    /// The ACP thread and JSON-RPC request a gate answers.
    struct ACPOrigin: Sendable, Equatable {
        var threadID: String
        var sessionID: String?
        /// The request's id as JSON.
        var requestID: String
        /// The request's seq in the thread (nil for gates opened before it was kept).
        var requestSeq: Int64? = nil
    }

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

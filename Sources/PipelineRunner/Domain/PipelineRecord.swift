import Foundation

/// A pipeline's lifecycle: running (a stage runs or is due), awaiting a decision on a finished
/// stage's gate, or ended (completed, failed, stopped by terminate). A pause holds a running
/// or awaiting pipeline without changing its status.
enum PipelineStatus: String, Sendable, Codable {
    case running, awaitingApproval, completed, failed, stopped

    var isFinished: Bool { self == .completed || self == .failed || self == .stopped }
}

/// A stage's lifecycle: waiting, running (an attempt in flight, or interrupted: the next
/// attempt starts over), completed (its gate waits), approved, rejected, failed, stopped.
enum StageStatus: String, Sendable, Codable {
    case waiting, running, completed, approved, rejected, failed, stopped
}

/// Tokens and cost of one provider call.
struct UsageRecord: Sendable, Equatable {
    var model: String
    var input: Int64
    var output: Int64
    var cacheCreation: Int64
    var cacheRead: Int64
    var costUSD: Double
}

/// What happened to one research URL.
struct FetchRecord: Sendable, Equatable, Codable {
    enum Status: String, Sendable, Codable { case fetched, refused, failed }
    var url: String
    var status: Status
    var detail: String?
    var characters: Int?
}

struct StageRecord: Sendable, Equatable {
    var position: Int
    var role: PipelineRole
    var task: String
    var researchURLs: [String]
    var status: StageStatus
    var attempt: Int
    var usage: UsageRecord?
    /// How long the attempt's provider call took, in milliseconds.
    var providerMilliseconds: Int64? = nil
    var startedAt: Date?
    var finishedAt: Date?
    var gateID: String?
    var decidedBy: String?
    var reason: String?
    var artifactID: String?
    var output: String?
    var fetches: [FetchRecord]
}

/// A pipeline as stored, with its stages in order.
struct PipelineRecord: Sendable, Equatable {
    var tenant: String
    var id: String
    var title: String
    var goal: String
    var unattended: Bool
    var export: Bool
    var roles: [String: RoleSettings]
    var status: PipelineStatus
    var paused: Bool
    var planner: UsageRecord
    var errorCode: String?
    var errorMessage: String?
    var createdBy: String
    var createdAt: Date
    var updatedAt: Date
    var finishedAt: Date?
    var stages: [StageRecord]

    /// The settings `role` runs with.
    func settings(for role: PipelineRole) -> RoleSettings {
        self.roles[role.rawValue] ?? RoleSettings.defaults(for: .stage(role))
    }

    /// The planner and every stage's cost.
    var costUSD: Double {
        self.planner.costUSD + self.stages.reduce(0) { $0 + ($1.usage?.costUSD ?? 0) }
    }
}

/// What a running pipeline does next (pure: decided from its stages).
enum PipelineStep: Equatable {
    /// Run (or run again, after an interrupted attempt) the stage at this position.
    case run(Int)
    /// A finished stage waits for its gate.
    case awaitDecision(Int)
    /// Every stage is approved.
    case complete
    /// A stage was rejected, failed or stopped: the pipeline has ended.
    case ended

    static func next(_ stages: [StageRecord]) -> PipelineStep {
        for stage in stages.sorted(by: { $0.position < $1.position }) {
            switch stage.status {
            case .approved: continue
            case .waiting, .running: return .run(stage.position)
            case .completed: return .awaitDecision(stage.position)
            case .rejected, .failed, .stopped: return .ended
            }
        }
        return .complete
    }
}

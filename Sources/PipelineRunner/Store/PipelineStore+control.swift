import Foundation
import PostgresNIO
import ServiceKit

extension PipelineStore {
    /// An operator's command as it applies to a pipeline.
    enum Control: String, Sendable {
        case pause, resume, terminate
    }

    /// What a command did: control-api's outcomes (`applied`, `noop`, `rejected`) and the
    /// agent state after it.
    struct ControlResult: Sendable, Equatable {
        var outcome: String
        var state: String
        var message: String?
        /// Whether the pipeline changed (the replicas hear of it).
        var changed: Bool
    }

    /// Applies an operator's command once (a redelivered command answers as the first time).
    func apply(_ control: Control, tenant: String, pipeline: String, commandID: String, actor: String, reason: String) async throws -> ControlResult {
        try await self.client.transaction(logger: self.logger) { connection in
            for try await (outcome, state) in try await connection.query(
                "SELECT outcome, state FROM applied_commands WHERE tenant_id = \(tenant) AND command_id = \(commandID)",
                logger: self.logger
            ).decode((String, String).self) {
                return ControlResult(outcome: outcome, state: state, message: "already applied", changed: false)
            }
            var current: (PipelineStatus, Bool)?
            for try await (status, paused) in try await connection.query(
                "SELECT status, paused FROM pipelines WHERE tenant_id = \(tenant) AND pipeline_id = \(pipeline) FOR UPDATE",
                logger: self.logger
            ).decode((String, Bool).self) {
                current = (PipelineStatus(rawValue: status) ?? .failed, paused)
            }
            let result: ControlResult
            if let (status, paused) = current {
                result = try await self.apply(
                    control,
                    status: status,
                    paused: paused,
                    tenant: tenant,
                    pipeline: pipeline,
                    actor: actor,
                    reason: reason,
                    on: connection
                )
            } else {
                result = ControlResult(outcome: "rejected", state: "unknown", message: "no pipeline \(pipeline)", changed: false)
            }
            try await connection.query(
                """
                INSERT INTO applied_commands (tenant_id, command_id, outcome, state) VALUES (\(tenant), \(commandID), \(result.outcome), \(result.state))
                """,
                logger: self.logger
            )
            return result
        }
    }

    private func apply(
        _ control: Control,
        status: PipelineStatus,
        paused: Bool,
        tenant: String,
        pipeline: String,
        actor: String,
        reason: String,
        on connection: PostgresConnection
    ) async throws -> ControlResult {
        let state = Self.agentState(status: status, paused: paused)
        if status.isFinished {
            return ControlResult(
                outcome: control == .terminate ? "noop" : "rejected",
                state: state,
                message: "the pipeline has ended",
                changed: false
            )
        }
        switch control {
        case .pause, .resume:
            let pause = control == .pause
            guard paused != pause else { return ControlResult(outcome: "noop", state: state, changed: false) }
            try await connection.query(
                "UPDATE pipelines SET paused = \(pause), updated_at = now() WHERE tenant_id = \(tenant) AND pipeline_id = \(pipeline)",
                logger: self.logger
            )
            return ControlResult(outcome: "applied", state: Self.agentState(status: status, paused: pause), changed: true)
        case .terminate:
            let message = "Pipeline stopped: terminated by \(actor)" + (reason.isEmpty ? "" : ": \(reason)")
            try await self.stop(tenant: tenant, pipeline: pipeline, code: "Terminated", message: message, on: connection)
            return ControlResult(outcome: "applied", state: "terminated", changed: true)
        }
    }

    /// Stops a pipeline for good with `code` and `message`: it and its stage in flight (running,
    /// or finished and waiting on its gate) end `stopped`.
    private func stop(tenant: String, pipeline: String, code: String, message: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            UPDATE pipelines SET status = 'stopped', error_code = \(code), error_message = \(message), updated_at = now(),
                finished_at = now()
            WHERE tenant_id = \(tenant) AND pipeline_id = \(pipeline)
            """,
            logger: self.logger
        )
        try await connection.query(
            """
            UPDATE stages SET status = 'stopped', finished_at = COALESCE(finished_at, now()), reason = \(message)
            WHERE tenant_id = \(tenant) AND pipeline_id = \(pipeline) AND status IN ('running', 'completed')
            """,
            logger: self.logger
        )
    }

    /// The state the fleet shows for a pipeline.
    static func agentState(status: PipelineStatus, paused: Bool) -> String {
        switch status {
        case .completed: "completed"
        case .failed: "failed"
        case .stopped: "terminated"
        case .running where paused, .awaitingApproval where paused: "paused"
        case .running: "running"
        case .awaitingApproval: "waiting_approval"
        }
    }

    /// A gate's outcome as it applies to the stage that opened it.
    struct Decision: Sendable, Equatable {
        var position: Int
        var approved: Bool
        var status: PipelineStatus
        var message: String?
    }

    /// Applies a stage gate's outcome (approvals' `gate` command): approve lets the pipeline go
    /// on; reject, or an expiry that does not allow, stops it with the reason ("Pipeline
    /// stopped: …"). Nil when the gate is not the one the stage waits on (a repeat, or a
    /// pipeline already ended).
    func decide(
        tenant: String,
        pipeline: String,
        idempotencyKey: String,
        gateStatus: String,
        allow: Bool,
        decidedBy: String,
        reason: String
    ) async throws -> Decision? {
        guard let (position, attempt) = GateKey.parse(idempotencyKey, pipeline: pipeline) else { return nil }
        return try await self.client.transaction(logger: self.logger) { connection in
            var waiting = false
            for try await _ in try await connection.query(
                """
                SELECT 1 FROM pipelines p JOIN stages s USING (tenant_id, pipeline_id)
                WHERE p.tenant_id = \(tenant) AND p.pipeline_id = \(pipeline) AND p.status = 'awaitingApproval'
                  AND s.position = \(position) AND s.attempt = \(attempt) AND s.status = 'completed'
                FOR UPDATE OF p, s
                """,
                logger: self.logger
            ).decode(Int.self) {
                waiting = true
            }
            // A gate cancelled by the pipeline's own terminate finds it stopped (not waiting). One
            // cancelled while the pipeline still waits on it (its terminate came while this runner
            // was down and expired) can never be decided: the pipeline stops.
            guard waiting else { return nil }
            if gateStatus == "cancelled" {
                let message = "Pipeline stopped: its approval gate was cancelled"
                try await self.stop(tenant: tenant, pipeline: pipeline, code: "GateCancelled", message: message, on: connection)
                return Decision(position: position, approved: false, status: .stopped, message: message)
            }
            let by = decidedBy.isEmpty ? "approvals" : decidedBy
            if allow {
                try await connection.query(
                    """
                    UPDATE stages SET status = 'approved', decided_by = \(by), reason = \(reason.isEmpty ? nil : reason)
                    WHERE tenant_id = \(tenant) AND pipeline_id = \(pipeline) AND position = \(position)
                    """,
                    logger: self.logger
                )
                try await connection.query(
                    "UPDATE pipelines SET status = 'running', updated_at = now() WHERE tenant_id = \(tenant) AND pipeline_id = \(pipeline)",
                    logger: self.logger
                )
                return Decision(position: position, approved: true, status: .running)
            }
            let why = reason.isEmpty ? (gateStatus == "expired" ? "the approval gate expired" : "User rejected") : reason
            let message = "Pipeline stopped: \(why)"
            try await connection.query(
                """
                UPDATE stages SET status = 'rejected', decided_by = \(by), reason = \(why)
                WHERE tenant_id = \(tenant) AND pipeline_id = \(pipeline) AND position = \(position)
                """,
                logger: self.logger
            )
            try await connection.query(
                """
                UPDATE pipelines SET status = 'failed', error_code = 'UserRejected', error_message = \(message), updated_at = now(), finished_at = now()
                WHERE tenant_id = \(tenant) AND pipeline_id = \(pipeline)
                """,
                logger: self.logger
            )
            return Decision(position: position, approved: false, status: .failed, message: message)
        }
    }
}

/// The idempotency key of a stage's gate: `<pipeline>.s<position>.a<attempt>` (one gate per
/// stage attempt, so a runner that retries opening it finds the same gate).
enum GateKey {
    static func make(pipeline: String, position: Int, attempt: Int) -> String {
        "\(pipeline).s\(position).a\(attempt)"
    }

    static func parse(_ key: String, pipeline: String) -> (position: Int, attempt: Int)? {
        guard key.hasPrefix(pipeline + ".s") else { return nil }
        let parts = key.dropFirst(pipeline.count + 2).split(separator: ".a", omittingEmptySubsequences: false)
        guard parts.count == 2, let position = Int(parts[0]), let attempt = Int(parts[1]) else { return nil }
        return (position, attempt)
    }
}

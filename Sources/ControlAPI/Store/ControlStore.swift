import Contracts
import Crypto
import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// Control requests, their commands and the audit trail, in Postgres. A request id is taken
/// once per tenant: the first request stores its receipt, the audit entry and one command per
/// agent in one transaction; every later request with that id gets the stored receipt.
struct ControlStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    /// What a new request asks for.
    struct Submission: Sendable {
        var tenant: String
        var actor: String
        var target: ControlTarget
        var targetID: String
        var action: CommandAction
        var reason: String
        /// A worker request's input.
        var input: String? = nil
        var requestID: String
        /// The agents it goes to: (swarm, agent).
        var agents: [(swarm: String, agent: String)]
        var expiresAt: Date

        /// Digest of what was asked, so a reused request id with another body is a conflict.
        var fingerprint: ByteBuffer {
            let text = [self.target.rawValue, self.targetID, self.action.rawValue, self.reason, self.input ?? ""].joined(separator: "\u{0}")
            return ByteBuffer(bytes: Array(SHA256.hash(data: Array(text.utf8))))
        }
    }

    /// A command as it is published to the agent.
    struct IssuedCommand: Sendable {
        var commandID: String
        var tenant: String
        var requestID: String
        var swarmID: String
        var agentID: String
        var action: CommandAction
        var reason: String
        var input: String? = nil
        var actor: String
        var issuedAt: Date
        var expiresAt: Date
    }

    enum Outcome: Sendable {
        /// The request is new: its receipt and the commands to publish.
        case created(ControlReceipt, [IssuedCommand])
        /// The request id was taken by this same request: its receipt.
        case replayed(ControlReceipt)
    }

    /// Stores a new request, or answers a known one.
    /// - Parameter admit: called (inside the transaction, once the request id is known to be
    ///   new) to apply the actor's rate limit; throwing rolls everything back.
    func submit(_ submission: Submission, admit: @Sendable () throws -> Void) async throws -> Outcome {
        // A refusal from inside the transaction (conflict, rate limit) is the answer.
        try await self.client.transaction(logger: self.logger) { connection in
            // Serializes the requests of one request id across replicas.
            try await connection.perform(
                "SELECT pg_advisory_xact_lock(hashtext(\(submission.tenant)), hashtext(\(submission.requestID)))",
                logger: self.logger
            )
            if let receipt = try await self.known(submission, on: connection) {
                return .replayed(receipt)
            }
            try admit()
            let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            let commands = submission.agents.map { target in
                IssuedCommand(
                    commandID: "cmd_" + randomHex(bytes: 12),
                    tenant: submission.tenant,
                    requestID: submission.requestID,
                    swarmID: target.swarm,
                    agentID: target.agent,
                    action: submission.action,
                    reason: submission.reason,
                    input: submission.input,
                    actor: submission.actor,
                    issuedAt: now,
                    expiresAt: submission.expiresAt
                )
            }
            let outcome = "accepted: \(commands.count) command\(commands.count == 1 ? "" : "s")"
            var auditID: Int64 = 0
            for try await id in try await connection.query(
                """
                INSERT INTO audit (tenant_id, at, actor, action, target, target_id, reason, request_id, outcome)
                VALUES (\(submission.tenant), \(now), \(submission.actor), \(submission.action.rawValue), \(submission.target.rawValue),
                        \(submission.targetID), \(submission.reason), \(submission.requestID), \(outcome))
                RETURNING audit_id
                """,
                logger: self.logger
            ).decode(Int64.self) {
                auditID = id
            }
            for command in commands {
                try await connection.query(
                    """
                    INSERT INTO commands (command_id, tenant_id, request_id, swarm_id, agent_id, action, reason, input, actor, issued_at, expires_at)
                    VALUES (\(command.commandID), \(command.tenant), \(command.requestID), \(command.swarmID), \(command.agentID),
                            \(command.action.rawValue), \(command.reason), \(command.input), \(command.actor), \(command.issuedAt), \(command.expiresAt))
                    """,
                    logger: self.logger
                )
            }
            let receipt = ControlReceipt(
                requestID: submission.requestID,
                action: submission.action,
                target: submission.target,
                targetID: submission.targetID,
                commands: commands.map { ControlReceipt.Command(commandID: $0.commandID, agentID: $0.agentID) },
                acceptedAt: now,
                auditID: auditID
            )
            let json = String(decoding: try JSONEncoder().encode(receipt), as: UTF8.self)
            try await connection.query(
                """
                INSERT INTO control_requests (tenant_id, request_id, actor, fingerprint, receipt)
                VALUES (\(submission.tenant), \(submission.requestID), \(submission.actor), \(submission.fingerprint), \(json)::jsonb)
                """,
                logger: self.logger
            )
            return .created(receipt, commands)
        }
    }

    /// The stored receipt of a known request id, or nil.
    /// - Throws: `Conflict` if the id was used for another request.
    func replay(_ submission: Submission) async throws -> ControlReceipt? {
        try await self.client.withConnection { connection in
            try await self.known(submission, on: connection)
        }
    }

    /// The receipt stored for the submission's request id, or nil; `Conflict` if the id was
    /// used for another request.
    private func known(_ submission: Submission, on connection: PostgresConnection) async throws -> ControlReceipt? {
        guard let (fingerprint, receipt) = try await self.stored(tenant: submission.tenant, requestID: submission.requestID, on: connection) else {
            return nil
        }
        guard fingerprint == submission.fingerprint else {
            throw APIError(.conflict, "requestId \(submission.requestID) was already used for another control request")
        }
        return receipt
    }

    private func stored(
        tenant: String,
        requestID: String,
        on connection: PostgresConnection
    ) async throws -> (ByteBuffer, ControlReceipt)? {
        for try await (fingerprint, receipt) in try await connection.query(
            "SELECT fingerprint, receipt::text FROM control_requests WHERE tenant_id = \(tenant) AND request_id = \(requestID)",
            logger: self.logger
        ).decode((ByteBuffer, String).self) {
            return (fingerprint, try JSONDecoder().decode(ControlReceipt.self, from: Data(receipt.utf8)))
        }
        return nil
    }

    /// A request of `tenant` with what its agents answered, or nil.
    func status(tenant: String, requestID: String) async throws -> (receipt: ControlReceipt, commands: [CommandStatus])? {
        let receipt: ControlReceipt? = try await self.client.withConnection { connection in
            try await self.stored(tenant: tenant, requestID: requestID, on: connection)?.1
        }
        guard let receipt else { return nil }
        return (receipt, try await self.commands(tenant: tenant, requestID: requestID))
    }

    private static let commandColumns = "command_id, agent_id, swarm_id, action, state, agent_state, message, issued_at, acknowledged_at"
    private typealias CommandRow = (String, String, String, String, String, String?, String?, Date, Date?)

    private static func commandStatus(_ row: CommandRow) -> CommandStatus {
        CommandStatus(
            commandID: row.0,
            agentID: row.1,
            swarmID: row.2,
            action: CommandAction(rawValue: row.3) ?? .pause,
            state: CommandStatus.State(rawValue: row.4) ?? .pending,
            agentState: row.5,
            message: row.6,
            issuedAt: row.7,
            acknowledgedAt: row.8
        )
    }

    func commands(tenant: String, requestID: String) async throws -> [CommandStatus] {
        var commands: [CommandStatus] = []
        for try await row in try await self.client.query(
            "SELECT \(unescaped: Self.commandColumns) FROM commands WHERE tenant_id = \(tenant) AND request_id = \(requestID) ORDER BY agent_id",
            logger: self.logger
        ).decode(CommandRow.self) {
            commands.append(Self.commandStatus(row))
        }
        return commands
    }

    /// The latest requests sent to a worker, newest first.
    func requests(tenant: String, agentID: String, limit: Int) async throws -> [CommandStatus] {
        var commands: [CommandStatus] = []
        for try await row in try await self.client.query(
            """
            SELECT \(unescaped: Self.commandColumns) FROM commands WHERE tenant_id = \(tenant) AND agent_id = \(agentID) AND action = 'request'
            ORDER BY issued_at DESC, command_id DESC LIMIT \(limit)
            """,
            logger: self.logger
        ).decode(CommandRow.self) {
            commands.append(Self.commandStatus(row))
        }
        return commands
    }

    /// The latest command sent to an agent, or nil.
    func lastCommand(tenant: String, agentID: String) async throws -> CommandStatus? {
        for try await row in try await self.client.query(
            """
            SELECT \(unescaped: Self.commandColumns) FROM commands WHERE tenant_id = \(tenant) AND agent_id = \(agentID)
            ORDER BY issued_at DESC, command_id DESC LIMIT 1
            """,
            logger: self.logger
        ).decode(CommandRow.self) {
            return Self.commandStatus(row)
        }
        return nil
    }

    /// Marks commands as stored by JetStream at their stream sequences.
    func markPublished(_ stored: [(commandID: String, sequence: UInt64)]) async throws {
        guard !stored.isEmpty else { return }
        let ids = stored.map(\.commandID)
        let sequences = stored.map { Int64($0.sequence) }
        try await self.client.write(
            """
            UPDATE commands SET published_at = now(), stream_seq = stored.seq
            FROM unnest(\(ids)::text[], \(sequences)::int8[]) AS stored (id, seq)
            WHERE command_id = stored.id AND published_at IS NULL
            """,
            logger: self.logger
        )
    }

    /// Commands committed but not yet stored by JetStream (the publish after the commit failed
    /// or the replica died in between), older than `age`, unexpired.
    func unpublished(olderThan age: Duration, limit: Int) async throws -> [IssuedCommand] {
        let seconds = Int(age.components.seconds)
        var commands: [IssuedCommand] = []
        for try await row in try await self.client.query(
            """
            SELECT command_id, tenant_id, request_id, swarm_id, agent_id, action, reason, input, actor, issued_at, expires_at FROM commands
            WHERE published_at IS NULL AND issued_at < now() - make_interval(secs => \(seconds)) AND expires_at > now()
            ORDER BY issued_at LIMIT \(limit)
            """,
            logger: self.logger
        ).decode((String, String, String, String, String, String, String, String?, String, Date, Date).self) {
            commands.append(
                IssuedCommand(
                    commandID: row.0,
                    tenant: row.1,
                    requestID: row.2,
                    swarmID: row.3,
                    agentID: row.4,
                    action: CommandAction(rawValue: row.5) ?? .pause,
                    reason: row.6,
                    input: row.7,
                    actor: row.8,
                    issuedAt: row.9,
                    expiresAt: row.10
                )
            )
        }
        return commands
    }

    /// The swarm and agent a command of `tenant` is for and its JetStream sequence (nil until
    /// JetStream stored it), or nil.
    func commandTarget(tenant: String, commandID: String) async throws -> (swarm: String, agent: String, sequence: UInt64?)? {
        for try await (swarm, agent, sequence) in try await self.client.query(
            "SELECT swarm_id, agent_id, stream_seq FROM commands WHERE tenant_id = \(tenant) AND command_id = \(commandID)",
            logger: self.logger
        ).decode((String, String, Int64?).self) {
            return (swarm, agent, sequence.map(UInt64.init))
        }
        return nil
    }

    /// What control-api issued as command `commandID` of `tenant` (its target, action, input and
    /// JetStream sequence, nil until JetStream stored it), or nil when it issued no such command.
    func issuedCommand(
        tenant: String,
        commandID: String
    ) async throws -> (
        swarm: String, agent: String, action: String, input: String?, sequence: UInt64?
    )? {
        for try await (swarm, agent, action, input, sequence) in try await self.client.query(
            "SELECT swarm_id, agent_id, action, input, stream_seq FROM commands WHERE tenant_id = \(tenant) AND command_id = \(commandID)",
            logger: self.logger
        ).decode((String, String, String, String?, Int64?).self) {
            return (swarm, agent, action, input, sequence.map(UInt64.init))
        }
        return nil
    }

    /// Records an agent's answer once, with its audit entry, in one transaction; a repeated
    /// answer changes nothing. False if `tenant` has no such command.
    func acknowledge(tenant: String, _ ack: CommandAcknowledgement) async throws -> Bool {
        try await self.client.withTransaction(logger: self.logger) { connection in
            var found: (String, String, String, String, String?, Bool)?
            for try await row in try await connection.query(
                """
                SELECT agent_id, action, request_id, reason, state, acknowledged_at IS NOT NULL FROM commands
                WHERE tenant_id = \(tenant) AND command_id = \(ack.commandID) FOR UPDATE
                """,
                logger: self.logger
            ).decode((String, String, String, String, String?, Bool).self) {
                found = row
            }
            guard let (agent, action, requestID, reason, _, acknowledged) = found else { return false }
            guard !acknowledged else { return true }
            try await connection.query(
                """
                UPDATE commands SET state = \(ack.outcome.rawValue), agent_state = \(ack.state), message = \(ack.message), acknowledged_at = now()
                WHERE command_id = \(ack.commandID)
                """,
                logger: self.logger
            )
            let outcome = ack.outcome.rawValue + ": " + ack.state + (ack.message.map { " (\($0))" } ?? "")
            try await connection.query(
                """
                INSERT INTO audit (tenant_id, actor, action, target, target_id, reason, request_id, command_id, outcome)
                VALUES (\(tenant), \("agent:" + agent), \("ack:" + action), 'agent', \(agent), \(reason), \(requestID), \(ack.commandID), \(outcome))
                """,
                logger: self.logger
            )
            return true
        }
    }

    /// A page of `tenant`'s audit trail, newest first, and the `before` of the next page (nil
    /// on the last).
    func audit(tenant: String, limit: Int, before: Int64?) async throws -> (entries: [AuditEntry], nextBefore: Int64?) {
        var entries: [AuditEntry] = []
        for try await row in try await self.client.query(
            """
            SELECT audit_id, at, actor, action, target, target_id, reason, request_id, command_id, outcome FROM audit
            WHERE tenant_id = \(tenant) AND audit_id < \(before ?? Int64.max) ORDER BY audit_id DESC LIMIT \(limit)
            """,
            logger: self.logger
        ).decode((Int64, Date, String, String, String, String, String, String?, String?, String).self) {
            entries.append(
                AuditEntry(
                    id: row.0,
                    at: row.1,
                    actor: row.2,
                    action: row.3,
                    target: ControlTarget(rawValue: row.4) ?? .agent,
                    targetID: row.5,
                    reason: row.6,
                    requestID: row.7,
                    commandID: row.8,
                    outcome: row.9
                )
            )
        }
        return (entries, entries.count == limit ? entries.last?.id : nil)
    }
}

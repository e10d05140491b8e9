import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// Gates, their audit trail and the outbox, in approvals' schema. Every change to a gate is one
/// transaction that also writes its audit entry and its outbox items, so nothing decided is
/// ever lost between Postgres and the bus.
struct GateStore: Sendable {
    let client: PostgresClient
    let messages: GateMessages
    let logger: Logger

    private static let columns = """
        tenant_id, gate_id, swarm_id, agent_id, idempotency_key, source, summary, risk, recommended_action, tool, tool_input,
        tool_input_truncated, masked_values, options, status, requested_at, expires_at, receipt_id, decided_at, decided_by, reason, option_id, allow,
        decision_id, acp_thread_id, acp_session_id, acp_request_id, acp_request_seq
        """

    // MARK: Opening

    /// What opening a gate found.
    enum Opened: Sendable {
        case created(Gate)
        /// The agent opened a gate with this key before: that gate, as it is now.
        case existing(Gate)
    }

    /// The gate the agent opened with `key`, if any (an agent asking again how its gate is).
    func existing(tenant: String, swarm: String, agent: String, key: String) async throws -> Gate? {
        let rows = try await self.client.query(Self.byKey(tenant: tenant, swarm: swarm, agent: agent, key: key), logger: self.logger)
        for try await row in rows { return try Gate(row: row) }
        return nil
    }

    /// The gate an agent opened with an idempotency key.
    private static func byKey(tenant: String, swarm: String, agent: String, key: String) -> PostgresQuery {
        """
        SELECT \(unescaped: Self.columns) FROM gates
        WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent) AND idempotency_key = \(key)
        """
    }

    /// Opens `gate` unless its agent already has one with its idempotency key.
    /// - Throws: `RateLimited` when its agent has `maxPerAgent` pending gates, or its tenant
    ///   `maxPerTenant`.
    func open(_ gate: Gate, maxPerAgent: Int, maxPerTenant: Int) async throws -> Opened {
        let items = try self.messages.items(for: gate)
        return try await self.client.transaction(logger: self.logger) { connection in
            // Serializes a tenant's openings, so the caps hold across replicas.
            try await connection.perform("SELECT pg_advisory_xact_lock(hashtext('gates'), hashtext(\(gate.tenant)))", logger: self.logger)
            let existing = try await connection.query(
                Self.byKey(tenant: gate.tenant, swarm: gate.swarm, agent: gate.agent, key: gate.idempotencyKey),
                logger: self.logger
            )
            for try await row in existing { return .existing(try Gate(row: row)) }
            let counts = try await connection.query(
                """
                SELECT count(*), count(*) FILTER (WHERE swarm_id = \(gate.swarm) AND agent_id = \(gate.agent))
                FROM gates WHERE tenant_id = \(gate.tenant) AND status = 'pending'
                """,
                logger: self.logger
            )
            for try await (tenant, agent) in counts.decode((Int, Int).self) {
                if agent >= maxPerAgent {
                    throw APIError(.rateLimited, "this agent has \(maxPerAgent) gates waiting already", retryAfterSeconds: 10)
                }
                if tenant >= maxPerTenant {
                    throw APIError(.rateLimited, "this tenant has \(maxPerTenant) gates waiting already", retryAfterSeconds: 10)
                }
            }
            let options = String(decoding: try JSONEncoder().encode(gate.options), as: UTF8.self)
            try await connection.query(
                """
                INSERT INTO gates (tenant_id, gate_id, swarm_id, agent_id, idempotency_key, source, summary, risk, recommended_action,
                    tool, tool_input, tool_input_truncated, masked_values, options, status, requested_at, expires_at, acp_thread_id, acp_session_id,
                    acp_request_id, acp_request_seq)
                VALUES (\(gate.tenant), \(gate.id), \(gate.swarm), \(gate.agent), \(gate.idempotencyKey), \(gate.source), \(gate.summary),
                    \(gate.risk), \(gate.recommendedAction), \(gate.tool), \(gate.toolInput), \(gate.toolInputTruncated), \(gate.maskedValues),
                    \(options),
                    'pending', \(gate.requestedAt), \(gate.expiresAt), \(gate.acp?.threadID), \(gate.acp?.sessionID), \(gate.acp?.requestID),
                    \(gate.acp?.requestSeq))
                """,
                logger: self.logger
            )
            try await self.record(gate, actor: "agent:\(gate.agent)", action: "opened", detail: gate.summary, items: items, on: connection)
            return .created(gate)
        }
    }

    // MARK: Settling

    /// What a decision found.
    enum Decided: Sendable {
        /// This decision settled the gate.
        case won(Gate)
        /// The gate was settled before (by this decision sent again, or by another).
        case settled(Gate)
        case notFound
    }

    /// Settles a pending gate with what `outcome` (called with the locked gate) gives, or
    /// answers how it was settled before. Concurrent decisions on one gate serialize on its
    /// row: exactly one wins. A gate past its expiry that the sweep has not reached yet is
    /// settled as `expired` here (by `system`), and that is the answer: no decision comes late.
    func decide(
        tenant: String,
        gateID: String,
        actor: String,
        decisionID: String?,
        now: Date,
        expired: @Sendable (Gate) -> GateRules.Outcome,
        outcome: @Sendable (Gate) throws -> GateRules.Outcome
    ) async throws -> Decided {
        try await self.client.transaction(logger: self.logger) { connection in
            let rows = try await connection.query(
                "SELECT \(unescaped: Self.columns) FROM gates WHERE tenant_id = \(tenant) AND gate_id = \(gateID) FOR UPDATE",
                logger: self.logger
            )
            var found: Gate?
            for try await row in rows { found = try Gate(row: row) }
            guard let gate = found else { return .notFound }
            guard gate.status == .pending else { return .settled(gate) }
            if gate.expiresAt <= now {
                return .settled(try await self.settle(gate, with: expired(gate), by: "system", decisionID: nil, now: now, on: connection))
            }
            return .won(try await self.settle(gate, with: try outcome(gate), by: actor, decisionID: decisionID, now: now, on: connection))
        }
    }

    /// Settles the pending gates expired at `now` (at most `limit`, oldest first), each with
    /// what `outcome` gives it. Replicas share the work (`SKIP LOCKED`).
    func expire(now: Date, limit: Int, outcome: @Sendable (Gate) -> GateRules.Outcome) async throws -> [Gate] {
        try await self.settlePending(
            """
            SELECT \(unescaped: Self.columns) FROM gates WHERE status = 'pending' AND expires_at <= \(now)
            ORDER BY expires_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
            """,
            actor: "system",
            now: now,
            outcome: outcome
        )
    }

    /// Cancels the pending gates of one agent (it was terminated).
    func cancel(tenant: String, swarm: String, agent: String, actor: String, now: Date) async throws -> [Gate] {
        try await self.settlePending(
            """
            SELECT \(unescaped: Self.columns) FROM gates
            WHERE tenant_id = \(tenant) AND swarm_id = \(swarm) AND agent_id = \(agent) AND status = 'pending'
            FOR UPDATE SKIP LOCKED
            """,
            actor: actor,
            now: now
        ) { _ in
            GateRules.Outcome(status: .cancelled, allow: false, optionID: nil, reason: "the agent was terminated")
        }
    }

    /// Cancels the pending gates ACP permission requests of `thread` opened (of `session` only,
    /// when given): the thread's session was cancelled.
    func cancelACP(tenant: String, thread: String, session: String?, now: Date) async throws -> [Gate] {
        try await self.settlePending(
            """
            SELECT \(unescaped: Self.columns) FROM gates
            WHERE tenant_id = \(tenant) AND acp_thread_id = \(thread) AND (\(session)::text IS NULL OR acp_session_id = \(session))
              AND status = 'pending'
            FOR UPDATE SKIP LOCKED
            """,
            actor: "system",
            now: now
        ) { _ in
            GateRules.Outcome(status: .cancelled, allow: false, optionID: nil, reason: "the ACP session was cancelled")
        }
    }

    /// Settles the pending gate of the ACP request `requestID` (its id as JSON) in `thread` with
    /// a person's answer there (``GateRules/threadAnswerOutcome(optionID:options:device:)``).
    /// With `requestSeq` (what the answer names), only the gate of that request.
    func answerACP(
        tenant: String,
        thread: String,
        requestID: String,
        requestSeq: Int64?,
        optionID: String?,
        device: String,
        now: Date
    ) async throws -> [Gate] {
        try await self.settlePending(
            """
            SELECT \(unescaped: Self.columns) FROM gates
            WHERE tenant_id = \(tenant) AND acp_thread_id = \(thread) AND acp_request_id = \(requestID) AND status = 'pending'
              AND (acp_request_seq IS NULL OR \(requestSeq)::bigint IS NULL OR acp_request_seq = \(requestSeq))
            FOR UPDATE SKIP LOCKED
            """,
            actor: device,
            now: now
        ) { gate in
            GateRules.threadAnswerOutcome(optionID: optionID, options: gate.options, device: device)
        }
    }

    /// Settles the gates `select` locks.
    private func settlePending(
        _ select: PostgresQuery,
        actor: String,
        now: Date,
        outcome: @Sendable (Gate) -> GateRules.Outcome
    ) async throws -> [Gate] {
        try await self.client.transaction(logger: self.logger) { connection in
            let rows = try await connection.query(select, logger: self.logger)
            var pending: [Gate] = []
            for try await row in rows { pending.append(try Gate(row: row)) }
            var settled: [Gate] = []
            for gate in pending {
                settled.append(try await self.settle(gate, with: outcome(gate), by: actor, decisionID: nil, now: now, on: connection))
            }
            return settled
        }
    }

    private func settle(
        _ gate: Gate,
        with outcome: GateRules.Outcome,
        by actor: String,
        decisionID: String?,
        now: Date,
        on connection: PostgresConnection
    ) async throws -> Gate {
        var gate = gate
        gate.status = outcome.status
        gate.settlement = Gate.Settlement(
            receiptID: "rcpt_" + randomHex(bytes: 12),
            decidedAt: now,
            decidedBy: actor,
            reason: outcome.reason,
            optionID: outcome.optionID,
            allow: outcome.allow,
            decisionID: decisionID
        )
        let settlement = gate.settlement!
        let items = try self.messages.items(for: gate)
        try await connection.query(
            """
            UPDATE gates SET status = \(gate.status.rawValue), receipt_id = \(settlement.receiptID), decided_at = \(settlement.decidedAt),
                decided_by = \(settlement.decidedBy), reason = \(settlement.reason), option_id = \(settlement.optionID),
                allow = \(settlement.allow), decision_id = \(settlement.decisionID)
            WHERE tenant_id = \(gate.tenant) AND gate_id = \(gate.id)
            """,
            logger: self.logger
        )
        try await self.record(gate, actor: actor, action: gate.status.rawValue, detail: settlement.reason, items: items, on: connection)
        return gate
    }

    /// The audit entry and outbox items of a change, in its transaction.
    private func record(
        _ gate: Gate,
        actor: String,
        action: String,
        detail: String?,
        items: [GateMessages.Item],
        on connection: PostgresConnection
    )
        async throws
    {
        let at = gate.settlement?.decidedAt ?? gate.requestedAt
        try await connection.query(
            """
            INSERT INTO gate_audit (tenant_id, gate_id, at, actor, action, detail)
            VALUES (\(gate.tenant), \(gate.id), \(at), \(actor), \(action), \(detail))
            """,
            logger: self.logger
        )
        try await connection.query(
            """
            INSERT INTO outbox (tenant_id, kind, payload)
            SELECT \(gate.tenant), k, p FROM unnest(\(items.map(\.kind.rawValue)), \(items.map { ByteBuffer(bytes: $0.payload) })) AS u (k, p)
            """,
            logger: self.logger
        )
    }

    // MARK: Reading

    /// One gate of the tenant.
    func gate(tenant: String, id: String) async throws -> Gate? {
        let rows = try await self.client.query(
            "SELECT \(unescaped: Self.columns) FROM gates WHERE tenant_id = \(tenant) AND gate_id = \(id)",
            logger: self.logger
        )
        for try await row in rows { return try Gate(row: row) }
        return nil
    }

    /// A page of the tenant's gates, newest first, after `cursor`.
    func list(tenant: String, statuses: [GateStatus], swarm: String?, limit: Int, after cursor: PageCursor?) async throws -> [Gate] {
        let rows = try await self.client.query(
            """
            SELECT \(unescaped: Self.columns) FROM gates
            WHERE tenant_id = \(tenant) AND status = ANY(\(statuses.map(\.rawValue)))
              AND (\(swarm)::text IS NULL OR swarm_id = \(swarm))
              AND (\(cursor?.at)::timestamptz IS NULL OR (requested_at, gate_id) < (\(cursor?.at), \(cursor?.id)))
            ORDER BY requested_at DESC, gate_id DESC
            LIMIT \(limit)
            """,
            logger: self.logger
        )
        var gates: [Gate] = []
        for try await row in rows { gates.append(try Gate(row: row)) }
        return gates
    }

    /// One entry of a gate's audit trail.
    struct AuditEntry: Sendable, Equatable {
        var at: Date
        var actor: String
        var action: String
        var detail: String?
    }

    /// The gate's audit trail, oldest first.
    func audit(tenant: String, gateID: String) async throws -> [AuditEntry] {
        let rows = try await self.client.query(
            "SELECT at, actor, action, detail FROM gate_audit WHERE tenant_id = \(tenant) AND gate_id = \(gateID) ORDER BY id",
            logger: self.logger
        )
        var entries: [AuditEntry] = []
        for try await (at, actor, action, detail) in rows.decode((Date, String, String, String?).self) {
            entries.append(AuditEntry(at: at, actor: actor, action: action, detail: detail))
        }
        return entries
    }
}

extension Gate {
    init(row: PostgresRow) throws {
        let cells = row.makeRandomAccess()
        let options = try cells["options"].decode(String.self)
        self.init(
            tenant: try cells["tenant_id"].decode(String.self),
            id: try cells["gate_id"].decode(String.self),
            swarm: try cells["swarm_id"].decode(String.self),
            agent: try cells["agent_id"].decode(String.self),
            idempotencyKey: try cells["idempotency_key"].decode(String.self),
            source: try cells["source"].decode(String.self),
            summary: try cells["summary"].decode(String.self),
            risk: try cells["risk"].decode(String.self),
            recommendedAction: try cells["recommended_action"].decode(String?.self),
            tool: try cells["tool"].decode(String?.self),
            toolInput: try cells["tool_input"].decode(String?.self),
            toolInputTruncated: try cells["tool_input_truncated"].decode(Bool.self),
            maskedValues: try cells["masked_values"].decode(Int.self),
            options: try JSONDecoder().decode([GateOption].self, from: Data(options.utf8)),
            status: GateStatus(rawValue: try cells["status"].decode(String.self)) ?? .pending,
            requestedAt: try cells["requested_at"].decode(Date.self),
            expiresAt: try cells["expires_at"].decode(Date.self)
        )
        if let thread = try cells["acp_thread_id"].decode(String?.self), let request = try cells["acp_request_id"].decode(String?.self) {
            self.acp = ACPOrigin(
                threadID: thread,
                sessionID: try cells["acp_session_id"].decode(String?.self),
                requestID: request,
                requestSeq: try cells["acp_request_seq"].decode(Int64?.self)
            )
        }
        if let receiptID = try cells["receipt_id"].decode(String?.self) {
            self.settlement = Settlement(
                receiptID: receiptID,
                decidedAt: try cells["decided_at"].decode(Date.self),
                decidedBy: try cells["decided_by"].decode(String.self),
                reason: try cells["reason"].decode(String?.self),
                optionID: try cells["option_id"].decode(String?.self),
                allow: try cells["allow"].decode(Bool.self),
                decisionID: try cells["decision_id"].decode(String?.self)
            )
        }
    }
}

import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle

/// Opens the gates services ask for (``Subjects/serviceGateRequests``, NATS request/reply,
/// replicas share it as queue group `approvals`): pipeline-runner's stage gates. A request is
/// checked as an agent's `POST /v1/agent/gates` is (ids, text, expiry, the tenant's opens per
/// minute and pending caps) and answered with the gate, new or the one its key opened; its
/// outcome goes to the agent's command queue like any gate's. Only services hold credentials
/// for the subject (the staging NATS users).
struct ServiceGateIntake: Service {
    let store: GateStore
    let outbox: GateOutbox
    let connection: NATSConnection
    let subjects: Subjects
    let settings: ApprovalsSettings
    /// Gates opened per tenant per minute, shared with the agents' operation.
    let opens: KeyedTokenBuckets
    let logger: Logger
    /// The subject's responder (readiness `gate-requests`).
    let responder: NATSResponder

    /// Requests handled at once per replica (each a transaction, on a few of the pool's
    /// connections, `postgres.max-connections`, which the gates' HTTP routes share); past it the
    /// subscription's buffer holds the rest (a thousand; newer ones are dropped, and their
    /// senders' requests time out).
    static let maxConcurrent = 4
    static let risks: Set<String> = ["low", "medium", "high", "critical"]

    init(
        store: GateStore,
        outbox: GateOutbox,
        connection: NATSConnection,
        subjects: Subjects,
        settings: ApprovalsSettings,
        opens: KeyedTokenBuckets,
        logger: Logger
    ) {
        self.store = store
        self.outbox = outbox
        self.connection = connection
        self.subjects = subjects
        self.settings = settings
        self.opens = opens
        self.logger = logger
        self.responder = NATSResponder(
            name: "gate-requests",
            connection: connection,
            subject: subjects.serviceGateRequests,
            queue: "approvals",
            buffering: .dropNewest(maxMessages: 1_000),
            maxConcurrent: Self.maxConcurrent,
            logger: logger
        )
    }

    func run() async throws {
        try await self.responder.serve { await self.handle($0) }
    }

    private func handle(_ message: NATSMessage) async {
        guard let reply = message.reply else { return }
        let answer: ServiceGateReply
        do {
            guard message.payload.count <= 16 * 1024 else { throw APIError(.invalidRequest, "a gate request is at most 16 KiB") }
            let request = try JSONDecoder().decode(ServiceGateRequest.self, from: Data(message.payload))
            let gate = try self.gate(for: request, now: Date.nowMilliseconds)
            if let wait = self.opens.take(gate.tenant) {
                throw APIError(
                    .rateLimited,
                    "more than \(Int(self.opens.capacity)) gates opened a minute by this tenant",
                    retryAfterSeconds: wait.retryAfterSeconds
                )
            }
            switch try await self.store.open(gate, maxPerAgent: self.settings.maxPendingPerAgent, maxPerTenant: self.settings.maxPendingPerTenant) {
            case .created(let gate):
                self.outbox.kick()
                answer = ServiceGateReply(gateId: gate.id, status: gate.status.rawValue)
            case .existing(let gate):
                answer = ServiceGateReply(gateId: gate.id, status: gate.status.rawValue)
            }
        } catch let error as APIError {
            answer = ServiceGateReply(error: error.message, retryable: error.code.isRetryable)
        } catch is DecodingError {
            answer = ServiceGateReply(error: "not a ServiceGateRequest")
        } catch {
            answer = ServiceGateReply(error: "the gate could not be stored; retry", retryable: true)
            self.logger.warning("service gate not opened", metadata: ["error": "\(String(reflecting: error))"])
        }
        do {
            try self.connection.publish(Array(try JSONEncoder().encode(answer)), to: reply)
        } catch {
            self.logger.warning("service gate reply not sent", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// The gate `request` asks for, checked.
    func gate(for request: ServiceGateRequest, now: Date) throws(APIError) -> Gate {
        for (value, field) in [(request.tenant, "tenant"), (request.swarmId, "swarmId"), (request.agentId, "agentId")] {
            if let problem = EntityID.problem(value, field: field) { throw APIError(.invalidRequest, problem) }
        }
        try InputCheck.key(request.idempotencyKey, "idempotencyKey")
        try InputCheck.text(request.summary, "summary", max: 500)
        if let tool = request.tool { try InputCheck.text(tool, "tool", max: 200) }
        try InputCheck.range(request.expiresInSeconds, "expiresInSeconds", 1...self.settings.maxExpirySeconds)
        guard Self.risks.contains(request.risk) else { throw APIError(.invalidRequest, "risk must be low, medium, high or critical") }
        let lifetime = request.expiresInSeconds ?? self.settings.defaultExpirySeconds
        let summary = CredentialMask(request.summary)
        return Gate(
            tenant: request.tenant,
            id: "g_" + randomHex(bytes: 12),
            swarm: request.swarmId,
            agent: request.agentId,
            idempotencyKey: request.idempotencyKey,
            source: "api",
            summary: summary.text,
            risk: request.risk,
            tool: request.tool,
            toolInput: nil,
            toolInputTruncated: false,
            maskedValues: summary.count,
            options: [],
            status: .pending,
            requestedAt: now,
            expiresAt: now.addingTimeInterval(TimeInterval(lifetime))
        )
    }
}

import ApprovalsContract
import Foundation
import ServiceKit

extension ApprovalsHandler {
    func listApprovalGates(_ input: Operations.ListApprovalGates.Input) async throws -> Operations.ListApprovalGates.Output {
        let person = try Caller.person()
        let query = input.query
        try InputCheck.range(query.limit, "limit", 1...200)
        if let swarm = query.swarmId { try InputCheck.id(swarm, "swarmId") }
        var cursor: PageCursor?
        if let text = query.cursor {
            guard let parsed = PageCursor(text) else { throw APIError(.invalidRequest, "cursor is not a nextCursor of this list") }
            cursor = parsed
        }
        let statuses: [GateStatus] =
            switch query.status ?? .pending {
            case .pending: [.pending]
            case .decided: [.approved, .rejected]
            case .expired: [.expired]
            case .cancelled: [.cancelled]
            case .all: GateStatus.allCases
            }
        let limit = query.limit ?? 50
        let gates = try await self.store.list(tenant: person.tenant, statuses: statuses, swarm: query.swarmId, limit: limit, after: cursor)
        let next = gates.count == limit ? gates.last.map { PageCursor(at: $0.requestedAt, id: $0.id).text } : nil
        return .ok(.init(body: .json(.init(gates: gates.map { $0.summary(webURL: self.messages.webURL($0)) }, nextCursor: next))))
    }

    func getApprovalGate(_ input: Operations.GetApprovalGate.Input) async throws -> Operations.GetApprovalGate.Output {
        let person = try Caller.person()
        try InputCheck.text(input.path.gateId, "gateId", max: 64)
        guard let gate = try await self.store.gate(tenant: person.tenant, id: input.path.gateId) else { throw Self.notFound(input.path.gateId) }
        let audit = try await self.store.audit(tenant: person.tenant, gateID: gate.id)
        return .ok(
            .init(
                body: .json(
                    .init(
                        gate: gate.summary(webURL: self.messages.webURL(gate)),
                        source: gate.source,
                        toolInput: gate.toolInputObject,
                        toolInputTruncated: gate.toolInputTruncated,
                        maskedValues: gate.maskedValues,
                        options: gate.options.map(\.contract),
                        receipt: gate.receipt,
                        audit: audit.map { .init(at: $0.at, actor: $0.actor, action: $0.action, detail: $0.detail) }
                    )
                )
            )
        )
    }

    func decideApprovalGate(_ input: Operations.DecideApprovalGate.Input) async throws -> Operations.DecideApprovalGate.Output {
        let person = try Caller.person()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        let gateID = input.path.gateId
        try InputCheck.text(gateID, "gateId", max: 64)
        if let reason = body.reason { try InputCheck.text(reason, "reason", max: 1000, required: false) }
        if let option = body.optionId { try InputCheck.text(option, "optionId", max: 128) }
        if let decisionID = body.decisionId { try InputCheck.key(decisionID, "decisionId") }
        let decision = GateRules.Decision(
            verdict: body.decision == .approve ? .approve : .reject,
            reason: body.reason,
            optionID: body.optionId,
            decisionID: body.decisionId
        )
        // Checked before the gate is read, so a rejection without its reason is a 400 on any gate.
        try GateRules.checkReason(decision, minRejectReason: self.settings.minRejectReason)
        if let wait = self.decisions.take(person.tenant + "\u{0}" + person.subject) {
            throw APIError(.rateLimited, "more than \(Int(self.decisions.capacity)) decisions a minute", retryAfterSeconds: wait.retryAfterSeconds)
        }
        let minReason = self.settings.minRejectReason
        let expiryAllows = self.settings.expiryAllows
        let result = try await self.store.decide(
            tenant: person.tenant,
            gateID: gateID,
            actor: person.subject,
            decisionID: decision.decisionID,
            now: Date.nowMilliseconds,
            expired: { GateExpiry.outcome($0, allows: expiryAllows) },
            outcome: { gate in try GateRules.outcome(of: decision, options: gate.options, minRejectReason: minReason) }
        )
        switch result {
        case .notFound:
            throw Self.notFound(gateID)
        case .won(let gate):
            if gate.acp == nil {
                self.outbox.publishOutcome(self.messages.outcome(gate))
            } else {
                self.outbox.kick()  // the answer goes to the ACP thread
            }
            return .ok(.init(body: .json(gate.receipt!)))
        case .settled(let gate):
            self.outbox.kick()  // in case it was settled just now, as expired
            if GateRules.isRepeat(decision, of: gate) { return .ok(.init(body: .json(gate.receipt!))) }
            let settlement = gate.settlement!
            let error = APIError(.conflict, "gate \(gate.id) was already \(gate.status.rawValue) by \(settlement.decidedBy)")
            return .conflict(
                .init(
                    body: .json(
                        .init(
                            error: .init(
                                code: error.code.rawValue,
                                _class: .conflict,
                                message: error.message,
                                requestId: RequestScope.current?.requestID,
                                retryable: false
                            ),
                            receipt: gate.receipt!
                        )
                    )
                )
            )
        }
    }

    static func notFound(_ gateID: String) -> APIError {
        APIError(.notFound, "no gate \(gateID.prefix(64))")
    }
}

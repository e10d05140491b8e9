import Contracts
import ControlAPIContract
import Foundation
import ServiceKit

/// Steering: controls of agents and swarms, their status and the audit trail; the workers
/// (`+workers`) and seed 004's runtime workers (`+runtime`), whose requests and stops are
/// controls too.
struct ControlsHandler: Sendable {
    let settings: ControlSettings
    let fleet: FleetIndex
    let store: ControlStore
    let bus: CommandBus
    let views: FleetViews
    /// Control requests per actor.
    let limiter: KeyedTokenBuckets
    /// Control requests per tenant, all its actors together.
    let tenantLimiter: KeyedTokenBuckets
}

extension ControlsHandler {
    func controlAgent(_ input: Operations.ControlAgent.Input) async throws -> Operations.ControlAgent.Output {
        let identity = try Caller.person()
        try InputCheck.id(input.path.agentId, "agentId")
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try Self.checkControl(body)
        let (receipt, _) = try await self.issue(
            identity,
            body.action.command,
            target: .agent,
            id: input.path.agentId,
            reason: body.reason,
            requestID: body.requestId
        ) { now in
            // The agent's open sessions say where its connector listens. The swarm the fleet last
            // saw it in is any event's to move (an ingest key can post for any agent), so it is
            // only a fallback for an agent with no session (whose command then waits for one).
            let swarms = try await self.store.openSwarms(tenant: identity.tenant, agent: input.path.agentId)
            if !swarms.isEmpty {
                guard swarms.count <= self.settings.maxSwarmTargets else {
                    throw APIError(
                        .conflict,
                        "agent \(input.path.agentId) has sessions open in \(swarms.count) swarms; one control addresses at most \(self.settings.maxSwarmTargets) (control.max-swarm-targets)"
                    )
                }
                return swarms.map { ($0, input.path.agentId) }
            }
            guard let agent = try await self.fleet.agent(tenant: identity.tenant, id: input.path.agentId) else {
                throw APIError(.notFound, "no agent \(input.path.agentId)")
            }
            return [(agent.swarmID, agent.agentID)]
        }
        return .accepted(.init(body: .json(.init(receipt))))
    }

    func controlSwarm(_ input: Operations.ControlSwarm.Input) async throws -> Operations.ControlSwarm.Output {
        let identity = try Caller.person()
        try InputCheck.id(input.path.swarmId, "swarmId")
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try Self.checkControl(body)
        let (receipt, _) = try await self.issue(
            identity,
            body.action.command,
            target: .swarm,
            id: input.path.swarmId,
            reason: body.reason,
            requestID: body.requestId
        ) { now in
            let members = Set(try await self.fleet.agents(tenant: identity.tenant, swarm: input.path.swarmId).map(\.agentID))
            let sessions = try await self.store.sessions(tenant: identity.tenant, swarm: input.path.swarmId)
            guard !members.isEmpty || !sessions.open.isEmpty else { throw APIError(.notFound, "no swarm \(input.path.swarmId)") }
            // A swarm action goes to every agent its connector has not said is gone: a state the
            // agent reported itself (which the process under control could forge) counts for nothing.
            let targets = members.union(sessions.open).subtracting(sessions.gone).sorted()
            guard !targets.isEmpty else {
                throw APIError(.conflict, "every agent of swarm \(input.path.swarmId) has ended")
            }
            guard targets.count <= self.settings.maxSwarmTargets else {
                throw APIError(
                    .conflict,
                    "swarm \(input.path.swarmId) has \(targets.count) agents; one control addresses at most \(self.settings.maxSwarmTargets) (control.max-swarm-targets): control its agents one by one"
                )
            }
            return targets.map { (input.path.swarmId, $0) }
        }
        return .accepted(.init(body: .json(.init(receipt))))
    }

    func getControl(_ input: Operations.GetControl.Input) async throws -> Operations.GetControl.Output {
        let identity = try Caller.person()
        try InputCheck.key(input.path.requestId, "requestId")
        guard let status = try await self.store.status(tenant: identity.tenant, requestID: input.path.requestId) else {
            throw APIError(.notFound, "no control request \(input.path.requestId)")
        }
        return .ok(.init(body: .json(.init(receipt: .init(status.receipt), commands: status.commands.map(Components.Schemas.CommandStatus.init)))))
    }

    func listAudit(_ input: Operations.ListAudit.Input) async throws -> Operations.ListAudit.Output {
        let identity = try Caller.person()
        try InputCheck.range(input.query.limit, "limit", 1...500)
        if let before = input.query.before, before < 1 {
            throw APIError(.invalidRequest, "before must be at least 1")
        }
        let page = try await self.store.audit(tenant: identity.tenant, limit: input.query.limit ?? 100, before: input.query.before)
        return .ok(.init(body: .json(.init(entries: page.entries.map(Components.Schemas.AuditEntry.init), nextBefore: page.nextBefore))))
    }

    /// The checks of a control request's body the generated types do not make.
    static func checkControl(_ body: Components.Schemas.ControlRequest) throws(APIError) {
        if let confirm = body.confirm { try InputCheck.text(confirm, "confirm", max: 64, required: false) }
        // Seed 000's body has no confirmation (its client asks for one): a confirmation that is
        // sent must be the right one.
        if body.action == .terminate, let confirm = body.confirm, confirm != "TERMINATE" {
            throw APIError(.invalidRequest, "confirm, when sent with terminate, must be \"TERMINATE\"")
        }
    }

    /// Answers a known request id with its stored receipt (`replayed`), else stores the request
    /// with one command per agent `targets` names (inside the actor's rate limit) and publishes
    /// the commands. Shared by the controls and the worker operations.
    func issue(
        _ identity: AccessIdentity,
        _ action: CommandAction,
        target: ControlTarget,
        id: String,
        reason: String,
        input: String? = nil,
        requestID: String,
        targets: (Date) async throws -> [(swarm: String, agent: String)]
    ) async throws -> (receipt: ControlReceipt, replayed: Bool) {
        try InputCheck.key(requestID, "requestId")
        try InputCheck.text(reason, "reason", max: 500)
        let now = Date()
        var submission = ControlStore.Submission(
            tenant: identity.tenant,
            actor: identity.subject,
            target: target,
            targetID: id,
            action: action,
            reason: reason,
            input: input,
            requestID: requestID,
            agents: [],
            expiresAt: now.addingTimeInterval(TimeInterval(self.settings.commandSeconds))
        )
        // A known request id is answered before anything else is looked at, so a retry gets
        // the first answer even if the fleet changed since.
        if let receipt = try await self.store.replay(submission) { return (receipt, true) }
        submission.agents = try await targets(now)
        let key = identity.tenant + "\u{0}" + identity.subject
        let outcome = try await self.store.submit(submission) { [limiter, tenantLimiter] in
            if let wait = limiter.take(key) {
                throw APIError(
                    .rateLimited,
                    "more than \(Int(limiter.capacity)) control requests a minute from \(identity.subject)",
                    retryAfterSeconds: wait.retryAfterSeconds
                )
            }
            if let wait = tenantLimiter.take(identity.tenant) {
                throw APIError(
                    .rateLimited,
                    "more than \(Int(tenantLimiter.capacity)) control requests a minute in this tenant (control.controls-per-tenant-per-minute)",
                    retryAfterSeconds: wait.retryAfterSeconds
                )
            }
        }
        switch outcome {
        case .replayed(let receipt):
            return (receipt, true)
        case .created(let receipt, let commands):
            let stored = await self.bus.publish(commands, headers: RequestScope.current?.busHeaders ?? [:])
            try? await self.store.markPublished(stored)
            return (receipt, false)
        }
    }
}

import AgentChannelContract
import Contracts
import EventLog
import Foundation
import Logging
import ServiceKit

/// The agents' channel (openapi/agent-channel.yaml): a connector opens a session with an ingest
/// key, long-polls its commands and acknowledges each with what it did.
struct AgentChannelHandler: Sendable {
    let settings: ControlSettings
    /// Signs the session tokens.
    let signer: AccessTokenSigner
    /// Whether the key that opened a session is still active.
    let ingestKeys: IngestKeyVerifier
    /// Announces a session's end, so its token is refused everywhere.
    let revocations: RevocationBus
    let store: ControlStore
    let bus: CommandBus
    /// When each agent session's poll was last recorded.
    let sessionsSeen: SessionTouches
    /// Agent sessions opened per tenant per minute (each supersede or end is a revocation
    /// every replica of every service keeps for a day).
    let sessionOpens: KeyedTokenBuckets
    let logger: Logger
}

extension AgentChannelHandler: APIProtocol {
    func openAgentSession(_ input: Operations.OpenAgentSession.Input) async throws -> Operations.OpenAgentSession.Output {
        let (tenant, keyID) = try Caller.agentKey()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try InputCheck.id(body.swarmId, "swarmId")
        try InputCheck.id(body.agentId, "agentId")
        // A service's agents (pipelines) hear their commands through the service, never a session.
        if body.swarmId == ReservedIDs.pipelineSwarm {
            throw APIError(.invalidRequest, "swarm \(ReservedIDs.pipelineSwarm) is pipeline-runner's: no agent session opens in it")
        }
        if let wait = self.sessionOpens.take(tenant) {
            throw APIError(
                .rateLimited,
                "more than \(Int(self.sessionOpens.capacity)) agent sessions opened a minute by this tenant",
                retryAfterSeconds: wait.retryAfterSeconds
            )
        }
        let session = "as_" + randomHex(bytes: 12)
        let ended = try await self.store.openSession(
            tenant: tenant,
            keyID: keyID,
            session: session,
            swarm: body.swarmId,
            agent: body.agentId,
            maxOpen: self.settings.maxAgentSessions,
            idleAfter: .seconds(self.settings.agentSessionIdleHours * 3600)
        )
        await self.closeSessions(tenant: tenant, ended, keeping: (body.swarmId, body.agentId))
        do {
            try await self.bus.openQueue(tenant: tenant, swarm: body.swarmId, agent: body.agentId)
        } catch {
            // No token was given: the session does not count against the cap.
            _ = try? await self.store.endSession(tenant: tenant, session: session, reason: .idle)
            throw error
        }
        let now = Date()
        let lifetime = Duration.seconds(self.settings.agentSessionHours * 3600)
        let token = try await self.signer.signAgentSession(
            tenant: tenant,
            session: session,
            swarm: body.swarmId,
            agent: body.agentId,
            lifetime: lifetime,
            now: now
        )
        return .created(
            .init(
                body: .json(
                    .init(
                        sessionId: session,
                        swarmId: body.swarmId,
                        agentId: body.agentId,
                        token: token,
                        expiresAt: now.addingTimeInterval(TimeInterval(lifetime.components.seconds))
                    )
                )
            )
        )
    }

    func endAgentSession(_ input: Operations.EndAgentSession.Input) async throws -> Operations.EndAgentSession.Output {
        let session = try Caller.agentSession()
        try InputCheck.range(input.query.exitStatus, "exitStatus", 0...255)
        if try await self.store.endSession(tenant: session.tenant, session: session.session, reason: .exited, exitStatus: input.query.exitStatus) {
            await self.closeSessions(
                tenant: session.tenant,
                [ControlStore.EndedSession(session: session.session, swarm: session.swarm, agent: session.agent)],
                keeping: nil
            )
        }
        return .noContent(.init())
    }

    /// Revokes the tokens of ended sessions and releases their queues, but the queue of the agent
    /// `keeping` names (its new session uses it).
    private func closeSessions(tenant: String, _ ended: [ControlStore.EndedSession], keeping: (swarm: String, agent: String)?) async {
        for session in ended {
            do {
                try await self.revocations.announce(tenant: tenant, device: session.session, revokedAt: Date())
            } catch {
                self.logger.warning(
                    "session end not announced",
                    metadata: ["session": "\(session.session)", "error": "\(String(reflecting: error))"]
                )
            }
            // Not the queue of the agent getting a session again (the release itself keeps the
            // queue of any agent with an open session).
            guard keeping.map({ $0.swarm != session.swarm || $0.agent != session.agent }) ?? true else { continue }
            await self.bus.releaseQueue(tenant: tenant, swarm: session.swarm, agent: session.agent)
        }
    }

    /// Whether `command` is one control-api issued, for the agent and with the action and input
    /// it has, stored at `sequence` when JetStream's sequence of it is recorded.
    func isIssued(_ command: BusControlCommand, sequence: UInt64?, tenant: String) async throws -> Bool {
        guard let issued = try await self.store.issuedCommand(tenant: tenant, commandID: command.commandID),
            let action = CommandAction(command.action)
        else { return false }
        return issued.swarm == command.swarmID && issued.agent == command.agentID && issued.action == action.rawValue
            && (action != .request || issued.input == command.input)
            && (issued.sequence == nil || sequence == nil || issued.sequence == sequence)
    }

    func pollCommands(_ input: Operations.PollCommands.Input) async throws -> Operations.PollCommands.Output {
        let session = try Caller.agentSession()
        try InputCheck.range(input.query.waitSeconds, "waitSeconds", 0...30)
        let wait = min(input.query.waitSeconds ?? 25, self.settings.maxPollSeconds)
        if self.sessionsSeen.due(session.tenant + "\u{0}" + session.session) {
            guard case .open(let keyID) = try await self.store.touchSession(tenant: session.tenant, session: session.session) else {
                throw APIError(.authInvalid, "the agent session has ended; open a new one")
            }
            // A session lives no longer than the key that opened it.
            if let keyID, try await !self.ingestKeys.isActive(keyID: keyID) {
                if try await self.store.endSession(tenant: session.tenant, session: session.session, reason: .keyRevoked) {
                    await self.closeSessions(
                        tenant: session.tenant,
                        [ControlStore.EndedSession(session: session.session, swarm: session.swarm, agent: session.agent)],
                        keeping: nil
                    )
                }
                throw APIError(.authInvalid, "the ingest key that opened this session was revoked")
            }
        }
        // Anything can be published on the bus by whoever has the rights: a command reaches an
        // agent only if control-api issued it (its table), as issued. Gate outcomes are
        // approvals', and the connector confirms each with approvals itself. A gate outcome
        // carries its gate's id as its own (`gate-<id>`): anything else on the channel would sit
        // unacknowledged, never answered, and block the agent's queue.
        let delivered = try await self.bus.next(session, wait: .seconds(wait)) { command, sequence in
            let issued =
                command.action == .gate
                ? command.hasGate && command.commandID == "gate-" + command.gate.gateID
                : try await self.isIssued(command, sequence: sequence, tenant: session.tenant)
            if !issued {
                self.logger.warning(
                    "dropped a command control-api did not issue",
                    metadata: ["tenant": "\(session.tenant)", "agent": "\(session.agent)", "command": "\(command.commandID)"]
                )
            }
            return issued
        }
        let commands = delivered.compactMap { command, handle, _ -> Components.Schemas.AgentCommand? in
            let action: String
            if command.action == .gate {
                action = "gate"
            } else if let known = CommandAction(command.action) {
                action = known.rawValue
            } else {
                return nil
            }
            return Components.Schemas.AgentCommand(
                commandId: command.commandID,
                requestId: command.requestID,
                swarmId: command.swarmID,
                agentId: command.agentID,
                action: action,
                reason: command.reason,
                input: command.action == .request ? command.input : nil,
                actor: command.actor,
                issuedAt: Date(timeIntervalSince1970: TimeInterval(command.issuedUnixNano) / 1e9),
                expiresAt: command.expiresUnixNano == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(command.expiresUnixNano) / 1e9),
                ackToken: handle,
                gate: command.hasGate ? Components.Schemas.GateOutcome(command.gate) : nil
            )
        }
        return .ok(.init(body: .json(.init(commands: commands))))
    }

    /// The command id prefix of approval gate outcomes (approvals' `gate-<gateId>`).
    static let gateCommandPrefix = "gate-"

    func ackCommand(_ input: Operations.AckCommand.Input) async throws -> Operations.AckCommand.Output {
        let session = try Caller.agentSession()
        guard case .json(let ack) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try InputCheck.id(ack.commandId, "commandId")
        try InputCheck.text(ack.ackToken, "ackToken", max: 1024)
        try InputCheck.text(ack.state, "state", max: 64)
        if let message = ack.message { try InputCheck.text(message, "message", max: 1000, required: false) }
        if ack.commandId.hasPrefix(Self.gateCommandPrefix) {
            // An approval gate's outcome (approvals published it): nothing of control-api's to
            // record, only the delivery to acknowledge.
            try await self.bus.acknowledge(handle: ack.ackToken, session: session, command: ack.commandId, sequence: nil)
            return .noContent(.init())
        }
        guard let target = try await self.store.commandTarget(tenant: session.tenant, commandID: ack.commandId),
            target.swarm == session.swarm, target.agent == session.agent
        else {
            throw APIError(.notFound, "no command \(ack.commandId) for this agent")
        }
        guard let sequence = target.sequence else {
            // Delivered, but its publish is not recorded yet (the dispatcher will): try again.
            throw APIError(.serviceUnavailable, "command \(ack.commandId) is still being recorded; retry", retryAfterSeconds: 1)
        }
        // The handle is checked before anything is recorded.
        _ = try await self.bus.deliveredSequence(ack.ackToken, session: session, command: ack.commandId, sequence: sequence)
        _ = try await self.store.acknowledge(
            tenant: session.tenant,
            CommandAcknowledgement(commandID: ack.commandId, outcome: .init(ack.outcome), state: ack.state, message: ack.message)
        )
        try await self.bus.acknowledge(handle: ack.ackToken, session: session, command: ack.commandId, sequence: sequence)
        return .noContent(.init())
    }
}

extension Components.Schemas.GateOutcome {
    init?(_ outcome: BusGateOutcome) {
        guard let status = StatusPayload(rawValue: outcome.status) else { return nil }
        self.init(
            gateId: outcome.gateID,
            idempotencyKey: outcome.idempotencyKey,
            status: status,
            allow: outcome.allow,
            optionId: outcome.optionID.isEmpty ? nil : outcome.optionID,
            reason: outcome.reason.isEmpty ? nil : outcome.reason,
            decidedBy: outcome.decidedBy.isEmpty ? nil : outcome.decidedBy
        )
    }
}

extension CommandAcknowledgement.Outcome {
    /// The outcome an agent's acknowledgement names.
    init(_ outcome: Components.Schemas.CommandAck.OutcomePayload) {
        switch outcome {
        case .applied: self = .applied
        case .noop: self = .noop
        case .rejected: self = .rejected
        case .failed: self = .failed
        case .expired: self = .expired
        }
    }
}

import Contracts
import ControlAPIContract
import Foundation
import ServiceKit

extension ControlAPIHandler {
    func pollCommands(_ input: Operations.PollCommands.Input) async throws -> Operations.PollCommands.Output {
        let tenant = try Caller.agentTenant()
        try Self.checkID(input.query.swarmId, "swarmId")
        try Self.checkID(input.query.agentId, "agentId")
        try Self.checkRange(input.query.waitSeconds, "waitSeconds", 0...30)
        let wait = min(input.query.waitSeconds ?? 25, self.settings.maxPollSeconds)
        let delivered = try await self.bus.next(tenant: tenant, agent: input.query.agentId, wait: .seconds(wait))
        let commands = delivered.compactMap { command, token -> Components.Schemas.AgentCommand? in
            guard let action = Components.Schemas.CommandAction(command.action) else { return nil }
            return Components.Schemas.AgentCommand(
                commandId: command.commandID,
                requestId: command.requestID,
                action: action,
                reason: command.reason,
                input: command.action == .request ? command.input : nil,
                actor: command.actor,
                issuedAt: Date(timeIntervalSince1970: TimeInterval(command.issuedUnixNano) / 1e9),
                expiresAt: command.expiresUnixNano == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(command.expiresUnixNano) / 1e9),
                ackToken: token
            )
        }
        return .ok(.init(body: .json(.init(commands: commands))))
    }

    func ackCommand(_ input: Operations.AckCommand.Input) async throws -> Operations.AckCommand.Output {
        let tenant = try Caller.agentTenant()
        guard case .json(let ack) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try Self.checkID(ack.commandId, "commandId")
        try Self.checkText(ack.ackToken, "ackToken", max: 512)
        try Self.checkText(ack.state, "state", max: 64)
        if let message = ack.message { try Self.checkText(message, "message", max: 1000, required: false) }
        guard let target = try await self.store.commandTarget(tenant: tenant, commandID: ack.commandId) else {
            throw APIError(.notFound, "no command \(ack.commandId)")
        }
        guard let sequence = target.sequence else {
            // Delivered, but its publish is not recorded yet (the dispatcher will): try again.
            throw APIError(.serviceUnavailable, "command \(ack.commandId) is still being recorded; retry", retryAfterSeconds: 1)
        }
        // The token is checked before anything is recorded.
        try self.bus.checkAckToken(ack.ackToken, tenant: tenant, agent: target.agent, sequence: sequence)
        _ = try await self.store.acknowledge(tenant: tenant, ack: ack)
        try self.bus.acknowledge(ackToken: ack.ackToken, tenant: tenant, agent: target.agent, sequence: sequence)
        return .noContent(.init())
    }
}

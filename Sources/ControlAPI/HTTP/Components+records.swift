import Contracts
import ControlAPIContract
import Foundation

// The operators' document's spelling of what the store keeps: the handlers answer with these.

extension Components.Schemas.CommandAction {
    /// The operators' document's spelling of `action`.
    init(_ action: CommandAction) {
        switch action {
        case .pause: self = .pause
        case .resume: self = .resume
        case .terminate: self = .terminate
        case .request: self = .request
        }
    }
}

extension Components.Schemas.ControlAction {
    /// The command an operator's control action becomes.
    var command: CommandAction {
        switch self {
        case .pause: .pause
        case .resume: .resume
        case .terminate: .terminate
        }
    }
}

extension Components.Schemas.ControlReceipt {
    init(_ receipt: ControlReceipt) {
        self.init(
            requestId: receipt.requestID,
            action: .init(receipt.action),
            target: .init(receipt.target),
            targetId: receipt.targetID,
            commands: receipt.commands.map { .init(commandId: $0.commandID, agentId: $0.agentID) },
            acceptedAt: receipt.acceptedAt,
            auditId: receipt.auditID
        )
    }
}

extension Components.Schemas.ControlReceipt.TargetPayload {
    init(_ target: ControlTarget) {
        switch target {
        case .swarm: self = .swarm
        case .agent: self = .agent
        case .worker: self = .worker
        }
    }
}

extension Components.Schemas.CommandStatus {
    init(_ status: CommandStatus) {
        self.init(
            commandId: status.commandID,
            agentId: status.agentID,
            swarmId: status.swarmID,
            action: .init(status.action),
            state: .init(status.state),
            agentState: status.agentState,
            message: status.message,
            issuedAt: status.issuedAt,
            acknowledgedAt: status.acknowledgedAt
        )
    }
}

extension Components.Schemas.CommandState {
    init(_ state: CommandStatus.State) {
        switch state {
        case .pending: self = .pending
        case .applied: self = .applied
        case .noop: self = .noop
        case .rejected: self = .rejected
        case .failed: self = .failed
        case .expired: self = .expired
        }
    }
}

extension Components.Schemas.AuditEntry {
    init(_ entry: AuditEntry) {
        self.init(
            id: entry.id,
            at: entry.at,
            actor: entry.actor,
            action: entry.action,
            target: .init(entry.target),
            targetId: entry.targetID,
            reason: entry.reason,
            requestId: entry.requestID,
            commandId: entry.commandID,
            outcome: entry.outcome
        )
    }
}

extension Components.Schemas.AuditEntry.TargetPayload {
    init(_ target: ControlTarget) {
        switch target {
        case .swarm: self = .swarm
        case .agent: self = .agent
        case .worker: self = .worker
        }
    }
}

extension Components.Schemas.TokenPair {
    init(_ pair: TokenPair) {
        self.init(
            tokenType: .bearer,
            accessToken: pair.accessToken,
            expiresIn: Int(pair.accessLifetime.components.seconds),
            refreshToken: pair.refreshToken,
            refreshExpiresAt: pair.refreshExpiresAt,
            deviceId: pair.deviceID,
            tenantId: pair.tenantID,
            scopes: pair.scopes.compactMap { Components.Schemas.Scope(rawValue: $0.rawValue) }
        )
    }
}

extension Components.Schemas.Device {
    init(_ device: Device) {
        self.init(
            deviceId: device.deviceID,
            name: device.name,
            platform: device.platform,
            person: device.person,
            scopes: device.scopes.compactMap { Components.Schemas.Scope(rawValue: $0.rawValue) },
            createdAt: device.createdAt,
            revokedAt: device.revokedAt
        )
    }
}

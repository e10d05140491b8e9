import Contracts
import Foundation
import ServiceKit
import SwiftProtobuf

/// What the outbox sends when a gate changes: the outcome to its agent's command channel (once
/// settled), the `approvalGate` event for the tenant's log, and, when it opens, the notice for
/// the notifier. Rendered in the transaction that changes the gate, sent after it commits.
struct GateMessages {
    let webBaseURL: String

    /// One row of the outbox.
    struct Item: Sendable, Equatable {
        enum Kind: String, Sendable {
            /// A `BusControlCommand` (action gate) for the agent's queue.
            case outcome
            /// A `BusServiceEvent` for ingest.
            case event
            /// A ``GateNotice`` (JSON) for the gates stream.
            case notice
        }

        var kind: Kind
        var payload: [UInt8]
    }

    func webURL(_ gate: Gate) -> String {
        "\(self.webBaseURL)/gates/\(gate.id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? gate.id)"
    }

    /// The items for `gate` as it is now (just opened, or just settled). The outcome goes first:
    /// it is what the agent waits for. A gate an ACP permission request opened is answered on
    /// its thread instead, after its event.
    func items(for gate: Gate) throws -> [Item] {
        var items: [Item] = []
        if gate.status.isSettled && gate.acp == nil {
            items.append(Item(kind: .outcome, payload: try self.outcome(gate).serializedBytes()))
        }
        items.append(Item(kind: .event, payload: try self.event(gate).serializedBytes()))
        if gate.status.isSettled, let answer = self.acpAnswer(gate) {
            items.append(Item(kind: .event, payload: try answer.serializedBytes()))
        }
        if gate.status == .pending {
            let notice = GateNotice(
                tenant: gate.tenant,
                gateId: gate.id,
                swarmId: gate.swarm,
                agentId: gate.agent,
                summary: gate.summary,
                risk: gate.risk,
                requestedAt: gate.requestedAt.milliseconds,
                expiresAt: gate.expiresAt.milliseconds,
                webUrl: self.webURL(gate),
                threadId: gate.acp?.threadID
            )
            items.append(Item(kind: .notice, payload: Array(try JSONEncoder().encode(notice))))
        }
        return items
    }

    /// The command that tells the agent how its gate ended (id `gate-<gateId>`, so a repeated
    /// publish is stored once).
    func outcome(_ gate: Gate) -> BusControlCommand {
        var command = BusControlCommand()
        command.commandID = "gate-" + gate.id
        command.tenantID = gate.tenant
        command.requestID = gate.id
        command.swarmID = gate.swarm
        command.agentID = gate.agent
        command.action = .gate
        command.reason = gate.settlement?.reason ?? ""
        command.actor = gate.settlement?.decidedBy ?? "system"
        command.issuedUnixNano = Int64((gate.settlement?.decidedAt ?? Date()).timeIntervalSince1970 * 1e9)
        var outcome = BusGateOutcome()
        outcome.gateID = gate.id
        outcome.idempotencyKey = gate.idempotencyKey
        outcome.status = gate.status.rawValue
        outcome.allow = gate.settlement?.allow ?? false
        outcome.optionID = gate.settlement?.optionID ?? ""
        outcome.reason = gate.settlement?.reason ?? ""
        outcome.decidedBy = gate.settlement?.decidedBy ?? ""
        command.gate = outcome
        return command
    }

    /// The JSON-RPC result answering the ACP request that opened `gate`, as the message ingest
    /// appends to its thread (msgId `gate-<gateId>-answer`): the option chosen, or cancelled.
    func acpAnswer(_ gate: Gate) -> BusServiceEvent? {
        guard let origin = gate.acp, let settlement = gate.settlement else { return nil }
        return Self.acpAnswer(
            origin,
            swarm: gate.swarm,
            agent: gate.agent,
            msgID: "gate-\(gate.id)-answer",
            optionID: gate.status == .approved || gate.status == .rejected ? settlement.optionID : nil,
            at: settlement.decidedAt
        )
    }

    /// The answer to the ACP request `origin`: `optionID` selected, or cancelled when nil.
    static func acpAnswer(_ origin: Gate.ACPOrigin, swarm: String, agent: String, msgID: String, optionID: String?, at: Date) -> BusServiceEvent {
        var event = BusServiceEvent()
        event.msgID = msgID
        event.swarmID = swarm
        event.agentID = agent
        event.kind = .acp
        event.severity = .info
        event.occurredUnixNano = at.milliseconds * 1_000_000
        var message = BusServiceACPMessage()
        message.threadID = origin.threadID
        message.sessionID = origin.sessionID ?? ""
        message.direction = "client_to_agent"
        message.body = Data(ACPPermission.answer(id: origin.requestID, optionID: optionID))
        message.answersSeq = origin.requestSeq ?? 0
        event.acp = message
        return event
    }

    /// The `approvalGate` frame fields (seed 000 §7.2), rendered once.
    private struct Frame: Encodable {
        var type = "approvalGate"
        var ts: Int64
        var gateId: String
        var status: String
        var summary: String
        var risk: String
        var swarmId: String
        var agentId: String
        var tool: String?
        var requestedAt: Int64
        var expiresAt: Int64
        var decidedAt: Int64?
        var decidedBy: String?
        var reason: String?
        var optionId: String?
        var allow: Bool?
        var webUrl: String
    }

    /// The event of the gate's current state (msgId `gate-<gateId>-<status>`: one per change).
    func event(_ gate: Gate) throws -> BusServiceEvent {
        let at = gate.settlement?.decidedAt ?? gate.requestedAt
        let frame = Frame(
            ts: at.milliseconds,
            gateId: gate.id,
            status: gate.status.rawValue,
            summary: gate.summary,
            risk: gate.risk,
            swarmId: gate.swarm,
            agentId: gate.agent,
            tool: gate.tool,
            requestedAt: gate.requestedAt.milliseconds,
            expiresAt: gate.expiresAt.milliseconds,
            decidedAt: gate.settlement?.decidedAt.milliseconds,
            decidedBy: gate.settlement?.decidedBy,
            reason: gate.settlement?.reason,
            optionId: gate.settlement?.optionID,
            allow: gate.settlement?.allow,
            webUrl: self.webURL(gate)
        )
        var event = BusServiceEvent()
        event.msgID = "gate-\(gate.id)-\(gate.status.rawValue)"
        event.swarmID = gate.swarm
        event.agentID = gate.agent
        event.kind = .approval
        event.severity = gate.status == .pending && (gate.risk == "high" || gate.risk == "critical") ? .warn : .info
        event.occurredUnixNano = at.milliseconds * 1_000_000
        event.frameTail = try BusServiceEvent.frameTail(frame)
        return event
    }
}

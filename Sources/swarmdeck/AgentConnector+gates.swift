import ApprovalsContract
import Foundation
import SwarmdeckTools

extension AgentConnector {
    /// Opens the gate the command asks for (approvals, with the session's token: the gate is
    /// this agent's) and waits for its outcome on the command channel. Any failure is an
    /// `error` reply: the caller fails closed.
    func requestGate(_ request: GateRelayRequest) async -> GateRelayReply {
        do {
            var toolInput: Components.Schemas.GateRequest.ToolInputPayload?
            if let text = request.toolInput {
                toolInput = try JSONDecoder().decode(Components.Schemas.GateRequest.ToolInputPayload.self, from: Data(text.utf8))
            }
            let body = Components.Schemas.GateRequest(
                idempotencyKey: request.idempotencyKey,
                summary: request.summary,
                risk: request.risk.flatMap(Components.Schemas.Risk.init(rawValue:)),
                tool: request.tool,
                toolInput: toolInput,
                expiresInSeconds: request.expiresInSeconds,
                source: Components.Schemas.GateRequest.SourcePayload(rawValue: request.source)
            )
            let client = try Client.approvals(url: self.options.approvalsURL, credential: try await self.sessionToken(), httpClient: self.client)
            let gate: Components.Schemas.AgentGate
            switch try await client.openGate(body: .json(body)) {
            case .created(let answer): gate = try answer.body.json
            case .ok(let answer): gate = try answer.body.json
            case .default(let status, let error):
                if status == 401 { self.sessionRefused() }
                throw ControlAPIClientError(status: status, error)
            }
            // Not the summary: a command line may hold a secret (approvals redacts what it stores).
            Self.say("gate \(gate.gateId) (\(request.tool ?? "no tool")): \(gate.status.rawValue)")
            if gate.status != .pending {
                return GateRelayReply(
                    gateId: gate.gateId,
                    status: gate.status.rawValue,
                    allow: gate.allow ?? false,
                    reason: gate.reason,
                    optionId: gate.optionId,
                    decidedBy: gate.decidedBy
                )
            }
            // A little past its expiry: the expired outcome comes through the channel too.
            return await self.waitForGate(gate.gateId, until: gate.expiresAt.addingTimeInterval(10))
        } catch {
            return .failure("cannot open the gate: \(error)")
        }
    }
}

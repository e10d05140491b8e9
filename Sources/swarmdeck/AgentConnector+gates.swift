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
            let gate = try await self.openGate(body)
            // Not the summary: a command line may hold a secret (approvals redacts what it stores).
            Self.say("gate \(gate.gateId) (\(request.tool ?? "no tool")): \(gate.status.rawValue)")
            if gate.status != .pending { return Self.reply(gate) }
            // A little past its expiry: the expired outcome comes through the channel too.
            let deadline = gate.expiresAt.addingTimeInterval(10)
            while true {
                // In slices, asking approvals between them: an outcome lost on the way (or
                // crowded out by a forged one of the same id) is found all the same.
                let slice = min(deadline, Date().addingTimeInterval(Self.gateCheckSeconds))
                let outcome = await self.waitForGate(gate.gateId, until: slice)
                // The outcome came over the bus, where a process with the rights could have
                // published it: approvals' own record of the gate is the answer. Opening again
                // with the same key answers the gate as it is now. A failed check is tried
                // again at the next slice; only the deadline ends the wait.
                let confirmed: Components.Schemas.AgentGate
                do {
                    confirmed = try await self.openGate(body)
                } catch {
                    Self.say("gate \(gate.gateId): approvals could not be asked (\(error)); asking again")
                    if Date() >= deadline { return .failure("no outcome for gate \(gate.gateId) by \(deadline)") }
                    if outcome.gateId != nil { self.forgetGateOutcome(gate.gateId) }
                    try? await Task.sleep(for: .seconds(1))
                    continue
                }
                if confirmed.status != .pending { return Self.reply(confirmed) }
                if outcome.gateId != nil { Self.say("gate \(gate.gateId): an outcome approvals does not confirm was ignored") }
                self.forgetGateOutcome(gate.gateId)
                if Date() >= deadline { return .failure("no outcome for gate \(gate.gateId) by \(deadline)") }
            }
        } catch {
            return .failure("cannot open the gate: \(error)")
        }
    }

    /// How often a waiting gate is asked of approvals when no outcome came.
    static let gateCheckSeconds: TimeInterval = 30

    /// Opens the gate, or answers the one this key opened earlier as it is now.
    private func openGate(_ body: Components.Schemas.GateRequest) async throws -> Components.Schemas.AgentGate {
        let client = try Client.approvals(url: self.options.approvalsURL, credential: try await self.sessionToken(), httpClient: self.client)
        switch try await client.openGate(body: .json(body)) {
        case .created(let answer): return try answer.body.json
        case .ok(let answer): return try answer.body.json
        case .default(let status, let error):
            if status == 401 { self.sessionRefused() }
            throw ControlAPIClientError(status: status, error)
        }
    }

    private static func reply(_ gate: Components.Schemas.AgentGate) -> GateRelayReply {
        GateRelayReply(
            gateId: gate.gateId,
            status: gate.status.rawValue,
            allow: gate.allow ?? false,
            reason: gate.reason,
            optionId: gate.optionId,
            decidedBy: gate.decidedBy
        )
    }
}

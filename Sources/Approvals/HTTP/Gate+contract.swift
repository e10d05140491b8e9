import ApprovalsContract
import Foundation
import OpenAPIRuntime

extension Gate {
    /// The gate as the phone lists it.
    func summary(webURL: String) -> Components.Schemas.GateSummary {
        Components.Schemas.GateSummary(
            id: self.id,
            gateId: self.id,
            status: Components.Schemas.GateStatus(rawValue: self.status.rawValue) ?? .pending,
            summary: self.summary,
            risk: Components.Schemas.Risk(rawValue: self.risk) ?? .medium,
            recommendedAction: self.recommendedAction.flatMap(Components.Schemas.GateSummary.RecommendedActionPayload.init(rawValue:)),
            swarmId: self.swarm,
            agentId: self.agent,
            tool: self.tool,
            requestedAt: self.requestedAt,
            expiresAt: self.expiresAt,
            decidedAt: self.settlement?.decidedAt,
            webUrl: webURL
        )
    }

    /// The receipt of how the gate was settled; nil while it is pending. Rendered from the
    /// stored gate only, so every answer about one settlement is the same, byte for byte.
    var receipt: Components.Schemas.Receipt? {
        guard let settlement = self.settlement, let status = Components.Schemas.GateStatus(rawValue: self.status.rawValue) else { return nil }
        return Components.Schemas.Receipt(
            receiptId: settlement.receiptID,
            gateId: self.id,
            status: status,
            decidedBy: settlement.decidedBy,
            decidedAt: settlement.decidedAt,
            reason: settlement.reason,
            optionId: settlement.optionID,
            allow: settlement.allow,
            decisionId: settlement.decisionID
        )
    }

    /// The gate as its agent sees it.
    var agentView: Components.Schemas.AgentGate {
        Components.Schemas.AgentGate(
            gateId: self.id,
            status: Components.Schemas.GateStatus(rawValue: self.status.rawValue) ?? .pending,
            requestedAt: self.requestedAt,
            expiresAt: self.expiresAt,
            allow: self.settlement?.allow,
            optionId: self.settlement?.optionID,
            reason: self.settlement?.reason,
            decidedBy: self.settlement?.decidedBy
        )
    }

    /// The stored tool input as the document's free-form object.
    var toolInputObject: Components.Schemas.GateDetail.ToolInputPayload? {
        guard let text = self.toolInput,
            let container = try? JSONDecoder().decode(OpenAPIObjectContainer.self, from: Data(text.utf8))
        else { return nil }
        return Components.Schemas.GateDetail.ToolInputPayload(additionalProperties: container)
    }
}

extension GateOption {
    init(_ option: Components.Schemas.Option) {
        self.init(optionId: option.optionId, name: option.name, kind: GateOption.Kind(rawValue: option.kind.rawValue) ?? .rejectOnce)
    }

    var contract: Components.Schemas.Option {
        Components.Schemas.Option(optionId: self.optionId, name: self.name, kind: .init(rawValue: self.kind.rawValue) ?? .rejectOnce)
    }
}

import ApprovalsContract
import Contracts
import Foundation
import OpenAPIRuntime
import ServiceKit

extension ApprovalsHandler {
    func openGate(_ input: Operations.OpenGate.Input) async throws -> Operations.OpenGate.Output {
        let session = try Caller.agentSession()
        // pipeline-runner's pipelines open their gates through the service lane only.
        guard session.swarm != ReservedIDs.pipelineSwarm else {
            throw APIError(.invalidRequest, "swarm \(ReservedIDs.pipelineSwarm) is pipeline-runner's: its gates open through the service")
        }
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try InputCheck.key(body.idempotencyKey, "idempotencyKey")
        // Asking again how a gate is (the connector does, while it waits) costs no opening and
        // no parse of its input, only a turn of a budget ten times the openings'.
        if let gate = try await self.store.existing(tenant: session.tenant, swarm: session.swarm, agent: session.agent, key: body.idempotencyKey) {
            if let wait = self.reasks.take(session.tenant) {
                throw APIError(
                    .rateLimited,
                    "more than \(Int(self.reasks.capacity)) gates asked about a minute by this tenant",
                    retryAfterSeconds: wait.retryAfterSeconds
                )
            }
            return .ok(.init(body: .json(gate.agentView)))
        }
        try InputCheck.text(body.summary, "summary", max: 500)
        if let tool = body.tool { try InputCheck.text(tool, "tool", max: 200) }
        try InputCheck.range(body.expiresInSeconds, "expiresInSeconds", 1...self.settings.maxExpirySeconds)
        let options = try Self.checkOptions(body.options ?? [])
        var toolInput: ToolInputRedactor.Redacted?
        if let object = body.toolInput {
            let data = try JSONEncoder().encode(object.additionalProperties)
            guard let parsed = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw APIError(.invalidRequest, "toolInput must be an object")
            }
            toolInput = ToolInputRedactor(maxBytes: self.settings.maxInputBytes).redact(parsed)
            if toolInput!.json.unicodeScalars.contains("\u{0}") { throw APIError(.invalidRequest, "toolInput must not contain NUL characters") }
        }
        if let wait = self.opens.take(session.tenant) {
            throw APIError(
                .rateLimited,
                "more than \(Int(self.opens.capacity)) gates opened a minute by this tenant",
                retryAfterSeconds: wait.retryAfterSeconds
            )
        }
        let summary = CredentialMask(body.summary)
        let now = Date.nowMilliseconds
        let lifetime = body.expiresInSeconds ?? self.settings.defaultExpirySeconds
        let gate = Gate(
            tenant: session.tenant,
            id: "g_" + randomHex(bytes: 12),
            swarm: session.swarm,
            agent: session.agent,
            idempotencyKey: body.idempotencyKey,
            source: body.source?.rawValue ?? "api",
            // Credentials in a command line stay out of the gate, its events and its audit.
            summary: summary.text,
            risk: body.risk?.rawValue ?? "medium",
            recommendedAction: body.recommendedAction?.rawValue,
            tool: body.tool,
            toolInput: toolInput?.json,
            toolInputTruncated: toolInput?.truncated ?? false,
            maskedValues: summary.count + (toolInput?.masked ?? 0),
            options: options,
            status: .pending,
            requestedAt: now,
            expiresAt: now.addingTimeInterval(TimeInterval(lifetime))
        )
        switch try await self.store.open(gate, maxPerAgent: self.settings.maxPendingPerAgent, maxPerTenant: self.settings.maxPendingPerTenant) {
        case .created(let gate):
            self.outbox.kick()
            return .created(.init(body: .json(gate.agentView)))
        case .existing(let gate):
            return .ok(.init(body: .json(gate.agentView)))
        }
    }

    /// The options a gate offers: distinct ids, bounded text.
    static func checkOptions(_ options: [Components.Schemas.Option]) throws(APIError) -> [GateOption] {
        guard options.count <= 8 else { throw APIError(.invalidRequest, "at most 8 options") }
        var seen: Set<String> = []
        for option in options {
            try InputCheck.text(option.optionId, "optionId", max: 128)
            try InputCheck.text(option.name, "name", max: 200)
            guard seen.insert(option.optionId).inserted else { throw APIError(.invalidRequest, "option \(option.optionId) is offered twice") }
        }
        return options.map(GateOption.init)
    }
}

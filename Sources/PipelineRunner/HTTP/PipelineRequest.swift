import Foundation
import PipelineRunnerContract
import ServiceKit

/// A `POST /v1/pipelines` body, checked: the goal, title and key bounded, every role's model
/// in the price table, temperatures in 0…1, system prompts bounded, export only when an export
/// folder is configured.
struct PipelineRequest: Sendable {
    var goal: String
    var title: String
    var unattended: Bool
    var idempotencyKey: String?
    var export: Bool
    /// Every role's settings (the seed's defaults where the request gave none), by role name.
    var roles: [String: RoleSettings]

    init(_ body: Components.Schemas.PipelineRequest, settings: PipelineSettings) throws(APIError) {
        try InputCheck.text(body.goal, "goal", max: 4000)
        guard !body.goal.unicodeScalars.contains("\u{0}") else { throw APIError(.invalidRequest, "goal must not contain NUL characters") }
        self.goal = body.goal
        if let title = body.title {
            try InputCheck.text(title, "title", max: 200)
            guard !title.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw APIError(.invalidRequest, "title must be one line without control characters")
            }
            self.title = title
        } else {
            let line = body.goal.split(whereSeparator: \.isNewline).first.map(String.init) ?? body.goal
            self.title = String(
                line.trimmingCharacters(in: .whitespaces).unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(80).map(
                    Character.init
                )
            )
        }
        self.unattended = body.unattended ?? false
        if let key = body.idempotencyKey { try InputCheck.key(key, "idempotencyKey") }
        self.idempotencyKey = body.idempotencyKey
        self.export = body.export ?? false
        if self.export && settings.exportDirectory == nil {
            throw APIError(.invalidRequest, "export is off on this server (pipeline.export-dir is empty)")
        }
        var roles: [String: RoleSettings] = [:]
        let given: [(PipelineCaller, Components.Schemas.RoleSettings?)] = [
            (.planner, body.roles?.planner), (.stage(.researcher), body.roles?.researcher), (.stage(.producer), body.roles?.producer),
            (.stage(.qaReviewer), body.roles?.qaReviewer),
        ]
        for (caller, override) in given {
            var role = RoleSettings.defaults(for: caller)
            if let model = override?.model {
                guard settings.prices.models[model] != nil else {
                    throw APIError(
                        .invalidRequest,
                        "roles.\(caller.name).model: \(String(model.prefix(100))) is not in the price table (\(settings.prices.models.keys.sorted().joined(separator: ", ")))"
                    )
                }
                role.model = model
            }
            if let temperature = override?.temperature {
                guard temperature.isFinite, (0...1).contains(temperature) else {
                    throw APIError(.invalidRequest, "roles.\(caller.name).temperature must be between 0 and 1")
                }
                role.temperature = temperature
            }
            if let prompt = override?.systemPrompt {
                try InputCheck.text(prompt, "roles.\(caller.name).systemPrompt", max: 20_000)
                guard !prompt.unicodeScalars.contains("\u{0}") else {
                    throw APIError(.invalidRequest, "roles.\(caller.name).systemPrompt must not contain NUL characters")
                }
                role.systemPrompt = prompt
            }
            roles[caller.name] = role
        }
        self.roles = roles
    }
}

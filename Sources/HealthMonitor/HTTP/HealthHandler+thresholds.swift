import Contracts
import Foundation
import HealthMonitorContract
import ServiceKit

extension HealthHandler {
    func getAlertThresholds(_ input: Operations.GetAlertThresholds.Input) async throws -> Operations.GetAlertThresholds.Output {
        let person = try Caller.person()
        let entries = try await self.thresholds.entries(tenant: person.tenant)
        var set = ThresholdSet()
        for entry in entries { set.set(entry.scope, target: entry.target, values: entry.values) }
        let tenant = entries.first { $0.scope == .tenant }
        return .ok(
            .init(
                body: .json(
                    .init(
                        defaults: try Self.contract(ThresholdValues.all(Thresholds.defaults)),
                        tenant: try Self.entry(
                            tenant ?? .init(scope: .tenant, target: "", values: .init(), version: 0, updatedBy: "", updatedAt: Date()),
                            set: set,
                            stored: tenant != nil
                        ),
                        swarms: try entries.filter { $0.scope == .swarm }.map { try Self.entry($0, set: set, stored: true) },
                        skills: try entries.filter { $0.scope == .skill }.map { try Self.entry($0, set: set, stored: true) }
                    )
                )
            )
        )
    }

    func putAlertThresholds(_ input: Operations.PutAlertThresholds.Input) async throws -> Operations.PutAlertThresholds.Output {
        let person = try Caller.person()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        if let swarm = body.swarmId { try InputCheck.id(swarm, "swarmId") }
        if let skill = body.skillId { try InputCheck.text(skill, "skillId", max: 64) }
        if let reason = body.reason { try InputCheck.text(reason, "reason", max: 500, required: false) }
        try InputCheck.range(body.expectedVersion, "expectedVersion", 0...Int(Int32.max))
        guard body.swarmId == nil || body.skillId == nil else { throw APIError(.invalidRequest, "give swarmId or skillId, not both") }
        let scope: ThresholdStore.Scope = body.swarmId != nil ? .swarm : body.skillId != nil ? .skill : .tenant
        let values = try Self.values(body.values)
        if let problem = values.problem(forSkill: scope == .skill) { throw APIError(.invalidRequest, problem) }
        if let wait = self.thresholdWrites.take(person.tenant) {
            throw APIError(
                .rateLimited,
                "at most \(self.settings.thresholdWritesPerMinute) threshold changes a minute",
                retryAfterSeconds: max(1, Int(wait.components.seconds) + 1)
            )
        }
        let entry = try await self.thresholds.put(
            tenant: person.tenant,
            scope: scope,
            target: body.swarmId ?? body.skillId ?? "",
            values: values,
            expectedVersion: body.expectedVersion,
            actor: person.subject,
            reason: body.reason
        )
        let set = try await self.thresholds.set(tenant: person.tenant)
        await self.notices.changed(tenant: person.tenant, set)
        return .ok(.init(body: .json(try Self.entry(entry, set: set, stored: true))))
    }

    /// The contract's entry for a stored one, with what is in force for its scope.
    static func entry(_ entry: ThresholdStore.Entry, set: ThresholdSet, stored: Bool) throws -> Components.Schemas.ThresholdEntry {
        let effective =
            switch entry.scope {
            case .tenant: set.effective()
            case .swarm: set.effective(swarm: entry.target)
            case .skill: set.effective(skill: entry.target)
            }
        return Components.Schemas.ThresholdEntry(
            scope: .init(rawValue: entry.scope.rawValue) ?? .tenant,
            swarmId: entry.scope == .swarm ? entry.target : nil,
            skillId: entry.scope == .skill ? entry.target : nil,
            values: try Self.contract(entry.values),
            version: entry.version,
            updatedBy: stored ? entry.updatedBy : nil,
            updatedAt: stored ? entry.updatedAt : nil,
            effective: try Self.contract(ThresholdValues.all(effective))
        )
    }

    /// The same names on both sides: a JSON round trip converts them.
    static func contract(_ values: ThresholdValues) throws -> Components.Schemas.ThresholdValues {
        try JSONDecoder().decode(Components.Schemas.ThresholdValues.self, from: JSONEncoder().encode(values))
    }

    static func values(_ contract: Components.Schemas.ThresholdValues) throws -> ThresholdValues {
        try JSONDecoder().decode(ThresholdValues.self, from: JSONEncoder().encode(contract))
    }
}

extension ThresholdValues {
    /// Every value of `thresholds`, set.
    static func all(_ thresholds: Thresholds) -> ThresholdValues {
        ThresholdValues(
            nearCapacityPercent: thresholds.nearCapacityPercent,
            redundancyScore: thresholds.redundancyScore,
            skillErrorRate: thresholds.skillErrorRate,
            skillP95LatencyMs: thresholds.skillP95LatencyMs,
            spikeSensitivity: thresholds.spikeSensitivity,
            stuckMinutes: thresholds.stuckMinutes,
            swarmErrorRate: thresholds.swarmErrorRate,
            costPerHourUsd: thresholds.costPerHourUsd,
            loopRepeats: thresholds.loopRepeats,
            forSeconds: thresholds.forSeconds,
            resolveAfterSeconds: thresholds.resolveAfterSeconds
        )
    }
}

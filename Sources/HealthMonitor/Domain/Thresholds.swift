/// The alert thresholds (seed 000 §12.6, §12.7): the server's defaults, overridden per tenant,
/// then per swarm, then per skill. A stored override holds only the values it sets.
struct ThresholdValues: Codable, Sendable, Equatable {
    var nearCapacityPercent: Double?
    var redundancyScore: Double?
    var skillErrorRate: Double?
    var skillP95LatencyMs: Double?
    var spikeSensitivity: Double?
    var stuckMinutes: Double?
    var swarmErrorRate: Double?
    var costPerHourUsd: Double?
    var loopRepeats: Int?
    var forSeconds: Int?
    var resolveAfterSeconds: Int?

    /// What each value may be.
    static var ranges: [(name: String, range: ClosedRange<Double>, value: KeyPath<ThresholdValues, Double?>)] {
        [
            ("nearCapacityPercent", 50...100, \.nearCapacityPercent),
            ("redundancyScore", 0.05...1, \.redundancyScore),
            ("skillErrorRate", 0.01...1, \.skillErrorRate),
            ("skillP95LatencyMs", 1...86_400_000, \.skillP95LatencyMs),
            ("spikeSensitivity", 1...10, \.spikeSensitivity),
            ("stuckMinutes", 0.05...1440, \.stuckMinutes),
            ("swarmErrorRate", 0.01...1, \.swarmErrorRate),
            ("costPerHourUsd", 0.01...1_000_000, \.costPerHourUsd),
        ]
    }
    static var integerRanges: [(name: String, range: ClosedRange<Int>, value: KeyPath<ThresholdValues, Int?>)] {
        [
            ("loopRepeats", 2...100, \.loopRepeats),
            ("forSeconds", 0...86_400, \.forSeconds),
            ("resolveAfterSeconds", 0...86_400, \.resolveAfterSeconds),
        ]
    }
    /// The values a skill's override may set.
    static let skillValues: Set<String> = ["skillErrorRate", "skillP95LatencyMs", "spikeSensitivity", "forSeconds", "resolveAfterSeconds"]

    /// The first problem with these values (a name out of its range, or not for a skill), or nil.
    func problem(forSkill: Bool) -> String? {
        for (name, range, path) in Self.ranges {
            guard let value = self[keyPath: path] else { continue }
            if !value.isFinite || !range.contains(value) { return "\(name) must be \(range.lowerBound)…\(range.upperBound)" }
            if forSkill && !Self.skillValues.contains(name) { return "\(name) does not apply to a skill" }
        }
        for (name, range, path) in Self.integerRanges {
            guard let value = self[keyPath: path] else { continue }
            if !range.contains(value) { return "\(name) must be \(range.lowerBound)…\(range.upperBound)" }
            if forSkill && !Self.skillValues.contains(name) { return "\(name) does not apply to a skill" }
        }
        return nil
    }

    var isEmpty: Bool { self == ThresholdValues() }

    /// These values over `base` (each set value wins).
    func over(_ base: Thresholds) -> Thresholds {
        Thresholds(
            nearCapacityPercent: self.nearCapacityPercent ?? base.nearCapacityPercent,
            redundancyScore: self.redundancyScore ?? base.redundancyScore,
            skillErrorRate: self.skillErrorRate ?? base.skillErrorRate,
            skillP95LatencyMs: self.skillP95LatencyMs ?? base.skillP95LatencyMs,
            spikeSensitivity: self.spikeSensitivity ?? base.spikeSensitivity,
            stuckMinutes: self.stuckMinutes ?? base.stuckMinutes,
            swarmErrorRate: self.swarmErrorRate ?? base.swarmErrorRate,
            costPerHourUsd: self.costPerHourUsd ?? base.costPerHourUsd,
            loopRepeats: self.loopRepeats ?? base.loopRepeats,
            forSeconds: self.forSeconds ?? base.forSeconds,
            resolveAfterSeconds: self.resolveAfterSeconds ?? base.resolveAfterSeconds
        )
    }
}

/// The thresholds in force for one subject.
struct Thresholds: Codable, Sendable, Equatable {
    var nearCapacityPercent = 80.0
    var redundancyScore = 0.4
    var skillErrorRate = 0.5
    var skillP95LatencyMs = 60_000.0
    var spikeSensitivity = 3.0
    var stuckMinutes = 10.0
    var swarmErrorRate = 0.25
    var costPerHourUsd = 50.0
    var loopRepeats = 5
    var forSeconds = 0
    var resolveAfterSeconds = 60

    static let defaults = Thresholds()
}

/// A tenant's stored thresholds: its own, and its swarms' and skills' overrides.
struct ThresholdSet: Sendable, Equatable {
    var tenant = ThresholdValues()
    var swarms: [String: ThresholdValues] = [:]
    /// By skill id.
    var skills: [String: ThresholdValues] = [:]

    func effective(swarm: String? = nil, skill: String? = nil) -> Thresholds {
        var thresholds = self.tenant.over(.defaults)
        if let swarm, let values = self.swarms[swarm] { thresholds = values.over(thresholds) }
        if let skill, let values = self.skills[skill] { thresholds = values.over(thresholds) }
        return thresholds
    }
}

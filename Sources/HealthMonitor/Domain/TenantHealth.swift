import Contracts
import Foundation
import ServiceKit

/// Everything health knows of one tenant, in memory: its sessions' context, its skills, its
/// agents and swarms, and the state of every alert. Events go in through ``apply(_:)``; the
/// rules are evaluated by ``evaluate(now:only:)``, which answers the incidents to open and to
/// resolve. Pure: the caller brings the time and persists what it answers.
struct TenantHealth: Sendable {
    /// How much one tenant may hold; past a bound the least recently active entry goes.
    struct Limits: Sendable, Equatable {
        var sessions = 2_000
        var skills = 500
        var agents = 2_000
        var swarms = 200
    }

    /// An incident to open or resolve.
    enum Change: Sendable, Equatable {
        case fire(incidentID: String, subject: AlertSubject, summary: String)
        case resolve(incidentID: String, subject: AlertSubject)
    }

    /// One alert's state: its lifecycle, and its incident while it fires.
    struct Alert: Sendable, Equatable {
        var subject: AlertSubject
        var lifecycle = AlertLifecycle()
        var incidentID: String?
    }

    /// What an event touched, to evaluate at once.
    enum Touched: Sendable, Hashable {
        case session(String)
        case skill(String)
        case agent(String)
        case swarm(String)
    }

    let tenant: String
    var limits: Limits
    var thresholds = ThresholdSet()
    var models: ModelWindows
    /// The spike detector's sampling interval.
    var sampleMilliseconds: Int64
    private(set) var sessions: [String: ContextTracker] = [:]
    private(set) var skills: [String: SkillWindow] = [:]
    private(set) var agents: [String: AgentActivity] = [:]
    private(set) var swarms: [String: SwarmWindow] = [:]
    private(set) var alerts: [String: Alert] = [:]
    /// Entries dropped at a bound, for the metrics.
    private(set) var evicted = 0

    /// How long a fatal event keeps `critical_error` true.
    static let fatalWindow: Int64 = 60_000
    /// A swarm's error rate counts from this many events in five minutes.
    static let minimumSwarmEvents = 20
    /// A skill's latency counts from this many calls in the hour.
    static let minimumLatencyCalls = 5

    init(tenant: String, limits: Limits, models: ModelWindows, sampleMilliseconds: Int64) {
        self.tenant = tenant
        self.limits = limits
        self.models = models
        self.sampleMilliseconds = sampleMilliseconds
    }

    /// Swarm and agent ids hold no control characters: U+001F separates them unambiguously.
    static func agentKey(swarm: String, agent: String) -> String { swarm + "\u{1F}" + agent }

    // MARK: Events

    /// Takes one committed event; answers what it touched.
    @discardableResult
    mutating func apply(_ event: HealthEvent) -> Set<Touched> {
        // Health's own events (incidents, a swarm's metrics) are nobody's activity.
        if event.kind == .incident || event.agentID.isEmpty { return [] }
        var touched: Set<Touched> = []
        let agentKey = Self.agentKey(swarm: event.swarmID, agent: event.agentID)
        let cost = event.kind == .usage ? max(0, event.fields?.costUsd ?? 0) : 0
        self.updateSwarm(event.swarmID) { $0.record(isError: event.severity.rawValue >= BusSeverity.error.rawValue, costUsd: cost, at: event.at) }
        touched.insert(.swarm(event.swarmID))
        self.updateAgent(agentKey, swarm: event.swarmID, agent: event.agentID) { agent in
            switch event.kind {
            case .state:
                if let state = event.fields?.state { agent.state(state, at: event.at) }
            case .approval:
                if let id = event.fields?.gateId, let status = event.fields?.status { agent.gate(id, pending: status == "pending") }
            default:
                agent.progress(at: event.at)
            }
            if event.severity == .fatal { agent.fatal(at: event.at) }
        }
        touched.insert(.agent(agentKey))

        switch event.kind {
        case .toolCall:
            guard let tool = event.fields?.tool, !tool.isEmpty else { break }
            let signature = ToolSignature(tool: tool, attributes: event.fields?.attrs)
            self.updateAgent(agentKey, swarm: event.swarmID, agent: event.agentID) { $0.toolCall(tool: tool, signature: signature) }
            let skillID = SkillID.make(swarm: event.swarmID, tool: tool)
            let parameters = self.spikeParameters(swarm: event.swarmID, skill: skillID)
            let sample = self.sampleMilliseconds
            self.updateSkill(skillID, swarm: event.swarmID, tool: tool) {
                $0.record(
                    ok: event.fields?.ok ?? true,
                    latencyMs: event.fields?.latencyMs,
                    at: event.at,
                    sampleMilliseconds: sample,
                    parameters: parameters
                )
            }
            touched.insert(.skill(skillID))
            if let signature {
                let session = event.sessionID
                self.updateSession(session, event: event) { $0.toolCall(signature, at: event.at) }
                touched.insert(.session(session))
            }
        case .usage:
            guard let tokens = event.contextTokens else { break }
            let session = event.sessionID
            let model = event.fields?.model
            let window = event.statedWindow ?? self.models.window(for: model)
            self.updateSession(session, event: event) { $0.request(tokens: tokens, model: model, window: window, at: event.at) }
            touched.insert(.session(session))
        default:
            break
        }
        return touched
    }

    private func spikeParameters(swarm: String, skill: String) -> SpikeDetector.Parameters {
        let thresholds = self.thresholds.effective(swarm: swarm, skill: skill)
        return SpikeDetector.Parameters(sensitivity: thresholds.spikeSensitivity, ceiling: thresholds.skillErrorRate)
    }

    private mutating func updateSession(_ id: String, event: HealthEvent, _ change: (inout ContextTracker) -> Void) {
        if self.sessions[id] == nil {
            Self.evictOldest(&self.sessions, bound: self.limits.sessions, evicted: &self.evicted) { $0.updatedAt }
            self.sessions[id] = ContextTracker(
                sessionID: id,
                swarmID: event.swarmID,
                agentID: event.agentID,
                window: self.models.defaultWindow,
                at: event.at
            )
        }
        change(&self.sessions[id]!)
    }

    private mutating func updateSkill(_ id: String, swarm: String, tool: String, _ change: (inout SkillWindow) -> Void) {
        if self.skills[id] == nil {
            Self.evictOldest(&self.skills, bound: self.limits.skills, evicted: &self.evicted) { $0.lastCallAt }
            self.skills[id] = SkillWindow(swarmID: swarm, tool: tool)
        }
        change(&self.skills[id]!)
    }

    private mutating func updateAgent(_ key: String, swarm: String, agent: String, _ change: (inout AgentActivity) -> Void) {
        if self.agents[key] == nil {
            Self.evictOldest(&self.agents, bound: self.limits.agents, evicted: &self.evicted) { $0.lastEventAt }
            self.agents[key] = AgentActivity(swarmID: swarm, agentID: agent)
        }
        change(&self.agents[key]!)
    }

    private mutating func updateSwarm(_ id: String, _ change: (inout SwarmWindow) -> Void) {
        if self.swarms[id] == nil {
            Self.evictOldest(&self.swarms, bound: self.limits.swarms, evicted: &self.evicted) { $0.lastEventAt }
            self.swarms[id] = SwarmWindow()
        }
        change(&self.swarms[id]!)
    }

    private static func evictOldest<Value>(_ entries: inout [String: Value], bound: Int, evicted: inout Int, by age: (Value) -> Int64) {
        if entries.evictOldest(bound: bound, by: age) { evicted += 1 }
    }

    // MARK: Rules

    /// A rule's verdict on one subject now (its summary only rendered when it holds).
    struct Verdict: Sendable {
        var subject: AlertSubject
        var holds: Bool
        var summary: String

        init(subject: AlertSubject, holds: Bool, summary: @autoclosure () -> String) {
            self.subject = subject
            self.holds = holds
            self.summary = holds ? summary() : ""
        }
    }

    /// Evaluates the rules on what `only` names (every subject when nil), and on every alert
    /// that fires; answers the incidents to open and resolve.
    mutating func evaluate(now: Int64, only: Set<Touched>? = nil, newID: () -> String) -> [Change] {
        var verdicts: [Verdict] = []
        if let only {
            for touched in only { verdicts += self.verdicts(touched, now: now) }
        } else {
            for id in self.sessions.keys { verdicts += self.verdicts(.session(id), now: now) }
            for id in self.skills.keys { verdicts += self.verdicts(.skill(id), now: now) }
            for key in self.agents.keys { verdicts += self.verdicts(.agent(key), now: now) }
            for id in self.swarms.keys { verdicts += self.verdicts(.swarm(id), now: now) }
            // An alert whose subject is gone (evicted) no longer holds.
            let seen = Set(verdicts.map(\.subject.fingerprint))
            for alert in self.alerts.values where !seen.contains(alert.subject.fingerprint) {
                verdicts.append(Verdict(subject: alert.subject, holds: false, summary: ""))
            }
        }
        var changes: [Change] = []
        for verdict in verdicts {
            let fingerprint = verdict.subject.fingerprint
            guard verdict.holds || self.alerts[fingerprint] != nil else { continue }
            var alert = self.alerts[fingerprint] ?? Alert(subject: verdict.subject)
            let thresholds = self.thresholds.effective(swarm: verdict.subject.swarmID, skill: verdict.subject.skillID)
            let transition = alert.lifecycle.evaluate(
                verdict.holds,
                now: now,
                forMilliseconds: Int64(thresholds.forSeconds) * 1000,
                holdMilliseconds: Int64(thresholds.resolveAfterSeconds) * 1000
            )
            switch transition {
            case .fire?:
                let id = newID()
                alert.incidentID = id
                changes.append(.fire(incidentID: id, subject: verdict.subject, summary: verdict.summary))
            case .resolve?:
                if let id = alert.incidentID { changes.append(.resolve(incidentID: id, subject: alert.subject)) }
                alert.incidentID = nil
            case nil:
                break
            }
            self.alerts[fingerprint] = alert.lifecycle.phase == .inactive ? nil : alert
        }
        return changes
    }

    /// Takes back an incident that fires (loaded from the store at start): the same
    /// fingerprint keeps this incident until it resolves.
    mutating func restore(incidentID: String, subject: AlertSubject) {
        var alert = Alert(subject: subject, lifecycle: .firing)
        alert.incidentID = incidentID
        self.alerts[subject.fingerprint] = alert
    }

    private mutating func verdicts(_ touched: Touched, now: Int64) -> [Verdict] {
        switch touched {
        case .session(let id):
            guard let session = self.sessions[id] else { return [] }
            let thresholds = self.thresholds.effective(swarm: session.swarmID)
            let base = AlertSubject(
                rule: .contextNearCapacity,
                key: "session:\(id)",
                swarmID: session.swarmID,
                agentID: session.agentID,
                sessionID: id
            )
            var redundancy = base
            redundancy.rule = .redundancySpike
            let warnings = session.warnings(nearCapacityPercent: thresholds.nearCapacityPercent, redundancy: thresholds.redundancyScore)
            return [
                Verdict(
                    subject: base,
                    holds: warnings.contains("near_capacity"),
                    summary:
                        "Session \(id) of \(session.agentID) is at \(Int(session.percentUsed.rounded()))% of its context window (\(session.tokens / 1000)K of \(session.window / 1000)K tokens)"
                ),
                Verdict(
                    subject: redundancy,
                    holds: warnings.contains("redundancy_spike"),
                    summary:
                        "\(session.agentID) repeats itself: \(Int((session.redundancyScore * 100).rounded()))% of its recent tool calls are redundant"
                ),
            ]
        case .skill(let id):
            guard var skill = self.skills[id] else { return [] }
            let thresholds = self.thresholds.effective(swarm: skill.swarmID, skill: id)
            let spiking = skill.closeSamples(
                through: now,
                sampleMilliseconds: self.sampleMilliseconds,
                parameters: SpikeDetector.Parameters(sensitivity: thresholds.spikeSensitivity, ceiling: thresholds.skillErrorRate)
            )
            self.skills[id] = skill
            let hour = skill.stats(hour: true, now: now)
            let base = AlertSubject(rule: .skillFailureSpike, key: "skill:\(id)", swarmID: skill.swarmID, skillID: id)
            var latency = base
            latency.rule = .skillLatencyHigh
            let p95 = hour.p95LatencyMs ?? 0
            return [
                Verdict(
                    subject: base,
                    holds: spiking,
                    summary:
                        "\(skill.tool) in swarm \(skill.swarmID) is failing: \(Int((hour.errorRate * 100).rounded()))% of \(hour.calls) calls in the last hour (baseline \(Int((skill.detector.mean * 100).rounded()))%)"
                ),
                Verdict(
                    subject: latency,
                    holds: hour.calls >= Self.minimumLatencyCalls && p95 >= thresholds.skillP95LatencyMs,
                    summary: "\(skill.tool) in swarm \(skill.swarmID) is slow: p95 \(Int(p95)) ms over the last hour"
                ),
            ]
        case .agent(let key):
            guard let agent = self.agents[key] else { return [] }
            let thresholds = self.thresholds.effective(swarm: agent.swarmID)
            let subject = { (rule: HealthRule) in
                AlertSubject(rule: rule, key: "agent:\(key)", swarmID: agent.swarmID, agentID: agent.agentID)
            }
            let idleMinutes = max(0, now - agent.lastProgressAt) / 60_000
            return [
                Verdict(
                    subject: subject(.agentStuck),
                    holds: agent.isStuck(now: now, stuckMilliseconds: Int64(thresholds.stuckMinutes * 60_000)),
                    summary: "\(agent.agentID) in swarm \(agent.swarmID) is running but has made no progress for \(idleMinutes) min"
                ),
                Verdict(
                    subject: subject(.toolLoop),
                    holds: agent.isLooping(loopRepeats: thresholds.loopRepeats),
                    summary:
                        "\(agent.agentID) in swarm \(agent.swarmID) is looping: the same \(agent.lastCallTool) call \(agent.repeats) times in a row"
                ),
                Verdict(
                    subject: subject(.criticalError),
                    holds: agent.hadFatal(now: now, window: Self.fatalWindow),
                    summary: "\(agent.agentID) in swarm \(agent.swarmID) reported a fatal error"
                ),
            ]
        case .swarm(let id):
            guard let swarm = self.swarms[id] else { return [] }
            let thresholds = self.thresholds.effective(swarm: id)
            let rate = swarm.errorRate(now: now)
            let cost = swarm.costPerHour(now: now)
            return [
                Verdict(
                    subject: AlertSubject(rule: .swarmErrorRate, key: "swarm:\(id)", swarmID: id),
                    holds: swarm.events(now: now) >= Self.minimumSwarmEvents && rate >= thresholds.swarmErrorRate,
                    summary: "Swarm \(id) is degraded: \(Int((rate * 100).rounded()))% of its events in the last 5 minutes are errors"
                ),
                Verdict(
                    subject: AlertSubject(rule: .runawayCost, key: "swarm:\(id)", swarmID: id),
                    holds: cost >= thresholds.costPerHourUsd,
                    summary: "Swarm \(id) is spending $\(String(format: "%.2f", cost)) per hour"
                ),
            ]
        }
    }

    // MARK: Reads

    /// Whether an agent has a stuck alert firing (for the swarm's rollup).
    func stuckAgents(swarm: String) -> Int {
        self.alerts.values.count { $0.subject.rule == .agentStuck && $0.subject.swarmID == swarm && $0.lifecycle.isFiring }
    }
}

extension TenantHealth {
    /// Another incident already fires for this fingerprint (the store kept it): the alert is
    /// that one.
    mutating func adopt(fingerprint: String, incidentID: String) {
        self.alerts[fingerprint]?.incidentID = incidentID
    }
}

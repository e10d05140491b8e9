import Contracts
import Foundation
import Testing

@testable import HealthMonitor

@Suite("Health's pure logic: histograms, spike detection, context, lifecycles, rules")
struct HealthRulesTests {
    @Test("a histogram's p95 is within 10% of the true value, and two histograms add up")
    func histogram() {
        var histogram = LatencyHistogram()
        #expect(histogram.quantile(0.95) == nil)
        for value in 1...1000 { histogram.record(Double(value)) }
        let p95 = try! #require(histogram.quantile(0.95))
        #expect(abs(p95 - 950) / 950 < 0.1, "\(p95)")
        var other = LatencyHistogram()
        for _ in 0..<1000 { other.record(10_000) }
        histogram.add(other)
        #expect(histogram.total == 2000)
        #expect(abs(histogram.quantile(0.95)! - 10_000) / 10_000 < 0.1)
        // Beyond the last bucket, and nonsense, are bounded.
        histogram.record(1e12)
        histogram.record(-1)
        histogram.record(.nan)
        #expect(histogram.total == 2001)
    }

    @Test("no spike during warm-up; a spike after it needs consecutive breaches, clears at once, and does not move the baseline")
    func spikes() {
        let parameters = SpikeDetector.Parameters(sensitivity: 3, ceiling: 0.5)
        func observe(_ detector: inout SpikeDetector, _ calls: Int, _ errors: Int) -> Bool {
            detector.observe(calls: calls, errors: errors, parameters)
        }
        var detector = SpikeDetector()
        // Warm-up: even a total failure raises nothing.
        for _ in 0..<parameters.warmUp { #expect(!observe(&detector, 10, 10)) }
        var fresh = SpikeDetector()
        for _ in 0..<parameters.warmUp { fresh.observe(calls: 10, errors: 0, parameters) }
        #expect(!observe(&fresh, 10, 8), "one breach is not yet a spike")
        #expect(observe(&fresh, 10, 8), "the second in a row is")
        #expect(fresh.mean < 0.05, "breaching samples leave the baseline where it was: \(fresh.mean)")
        #expect(!observe(&fresh, 10, 0), "recovered")
        // Too few calls is no evidence; an idle interval clears.
        #expect(!observe(&fresh, 2, 2))
        fresh.observe(calls: 10, errors: 9, parameters)
        fresh.observe(calls: 10, errors: 9, parameters)
        #expect(fresh.breaching)
        #expect(!observe(&fresh, 0, 0))
        // Under the ceiling, a z-score spike over a noisy baseline needs a real jump.
        var noisy = SpikeDetector()
        for rate in [1, 3, 2, 1, 3, 2, 1, 2] { noisy.observe(calls: 10, errors: rate, parameters) }
        #expect(!observe(&noisy, 10, 3))
    }

    @Test("context: the latest request's tokens, compactions, and redundancy that ignores re-reads of rewritten files")
    func context() {
        var context = ContextTracker(sessionID: "s", swarmID: "w", agentID: "a", window: 200_000, at: 0)
        context.request(tokens: 150_000, model: "claude-sonnet-4-5", window: 200_000, at: 1)
        context.request(tokens: 170_000, model: nil, window: 200_000, at: 2)
        #expect(context.percentUsed == 85)
        #expect(context.warnings(nearCapacityPercent: 80, redundancy: 0.4) == ["near_capacity"])
        context.request(tokens: 30_000, model: nil, window: 200_000, at: 3)
        #expect(context.compactions == 1)
        #expect(context.warnings(nearCapacityPercent: 80, redundancy: 0.4).isEmpty)
        #expect(context.series.map(\.tokens) == [150_000, 170_000, 30_000])

        func call(_ tool: String, _ path: String) -> ToolSignature {
            ToolSignature(tool: tool, attributes: ["tool_parameters": .string(#"{"file_path":"\#(path)"}"#)])!
        }
        // Read a, edit a, read a again (new content): not redundant. Read b twice: redundant.
        for _ in 0..<4 {
            context.toolCall(call("Read", "a"), at: 4)
            context.toolCall(call("Edit", "a"), at: 4)
        }
        #expect(context.redundancyScore == 0, "below the minimum of calls")
        context.toolCall(call("Read", "a"), at: 5)
        context.toolCall(call("Read", "b"), at: 5)
        context.toolCall(call("Read", "b"), at: 5)
        // Reads of a after an edit of a are not redundant; the edits repeat each other (3 of
        // them), b's second read does: 4 of 11.
        #expect(abs(context.redundancyScore - 4.0 / 11.0) < 1e-9, "\(context.redundancyScore)")
    }

    @Test("a tool signature includes the arguments, ignores their key order, and needs them")
    func signatures() {
        let one = ToolSignature(tool: "Bash", attributes: ["tool_parameters": .string(#"{"command":"ls","timeout":5}"#)])
        let two = ToolSignature(tool: "Bash", attributes: ["tool_parameters": .string(#"{"timeout":5,"command":"ls"}"#)])
        let other = ToolSignature(tool: "Bash", attributes: ["tool_parameters": .string(#"{"command":"pwd","timeout":5}"#)])
        #expect(one != nil && one?.hash == two?.hash)
        #expect(one?.hash != other?.hash)
        #expect(ToolSignature(tool: "Bash", attributes: ["duration_ms": 4]) == nil)
        #expect(ToolSignature(tool: "Edit", attributes: ["input": .object(["path": "x"])])?.writes == true)
    }

    @Test("an alert is pending for its `for` time, fires, survives a flap within the hold-off, and resolves after it")
    func lifecycle() {
        var alert = AlertLifecycle()
        #expect(alert.evaluate(true, now: 0, forMilliseconds: 1000, holdMilliseconds: 500) == nil)
        #expect(alert.evaluate(true, now: 999, forMilliseconds: 1000, holdMilliseconds: 500) == nil)
        #expect(alert.evaluate(true, now: 1000, forMilliseconds: 1000, holdMilliseconds: 500) == .fire)
        #expect(alert.evaluate(false, now: 1100, forMilliseconds: 1000, holdMilliseconds: 500) == nil)
        #expect(alert.evaluate(true, now: 1200, forMilliseconds: 1000, holdMilliseconds: 500) == nil, "a flap: still the same incident")
        #expect(alert.evaluate(false, now: 1300, forMilliseconds: 1000, holdMilliseconds: 500) == nil)
        #expect(alert.evaluate(false, now: 1799, forMilliseconds: 1000, holdMilliseconds: 500) == nil)
        #expect(alert.evaluate(false, now: 1800, forMilliseconds: 1000, holdMilliseconds: 500) == .resolve)
        // A pending condition that clears never fires.
        var brief = AlertLifecycle()
        _ = brief.evaluate(true, now: 0, forMilliseconds: 1000, holdMilliseconds: 0)
        #expect(brief.evaluate(false, now: 10, forMilliseconds: 1000, holdMilliseconds: 0) == nil)
        #expect(brief.phase == .inactive)
    }

    @Test("thresholds are validated and layered: defaults, tenant, swarm, skill")
    func thresholds() {
        #expect(ThresholdValues(nearCapacityPercent: 120).problem(forSkill: false) != nil)
        #expect(ThresholdValues(stuckMinutes: .nan).problem(forSkill: false) != nil)
        #expect(ThresholdValues(loopRepeats: 1).problem(forSkill: false) != nil)
        #expect(ThresholdValues(stuckMinutes: 5).problem(forSkill: true) != nil, "not a skill's")
        #expect(ThresholdValues(skillErrorRate: 0.2).problem(forSkill: true) == nil)
        var set = ThresholdSet()
        set.tenant = ThresholdValues(nearCapacityPercent: 70)
        set.swarms["w"] = ThresholdValues(nearCapacityPercent: 90, skillErrorRate: 0.3)
        set.skills["sk"] = ThresholdValues(skillErrorRate: 0.1)
        #expect(set.effective().nearCapacityPercent == 70)
        #expect(set.effective(swarm: "w").nearCapacityPercent == 90)
        #expect(set.effective(swarm: "w", skill: "sk").skillErrorRate == 0.1)
        #expect(set.effective(swarm: "other").skillErrorRate == Thresholds.defaults.skillErrorRate)
    }

    @Test("model windows: 1M for the 1M-context models, the default otherwise; a malformed table is refused")
    func models() {
        let models = ModelWindows(table: ModelWindows.defaultTable, defaultWindow: 200_000)!
        #expect(models.window(for: "claude-sonnet-4-5[1m]") == 1_000_000)
        #expect(models.window(for: "claude-opus-4-1") == 200_000)
        #expect(models.window(for: nil) == 200_000)
        #expect(ModelWindows(table: "gpt-5=400000", defaultWindow: 200_000)?.window(for: "gpt-5-codex") == 400_000)
        #expect(ModelWindows(table: "nonsense", defaultWindow: 1) == nil)
        #expect(ModelWindows(table: "x=-5", defaultWindow: 1) == nil)
    }

    static func event(
        _ seq: Int64,
        _ kind: BusEventKind,
        agent: String = "a1",
        at: Int64,
        severity: BusSeverity = .info,
        _ frame: [String: Any] = [:]
    ) -> HealthEvent {
        let bytes = try! JSONSerialization.data(withJSONObject: frame)
        return HealthEvent(seq: seq, swarmID: "w", agentID: agent, kind: kind, severity: severity, at: at, frame: Array(bytes))
    }

    @Test("a tenant: near capacity fires on the event and resolves after a compaction and the hold-off; stuck unless waiting on a gate; loops")
    func tenant() {
        var tenant = TenantHealth(
            tenant: "t",
            limits: .init(),
            models: ModelWindows(table: "", defaultWindow: 200_000)!,
            sampleMilliseconds: 1000
        )
        tenant.thresholds.tenant = ThresholdValues(stuckMinutes: 1, resolveAfterSeconds: 5)
        var ids = 0
        func newID() -> String {
            ids += 1
            return "inc\(ids)"
        }
        let usage = { (seq: Int64, tokens: Int, at: Int64) in
            Self.event(seq, .usage, at: at, ["inputTokens": tokens, "outputTokens": 1, "attrs": ["session.id": "s1", "cache_read_tokens": 1000]])
        }
        var changes = tenant.evaluate(now: 1000, only: tenant.apply(usage(1, 100_000, 1000)), newID: newID)
        #expect(changes.isEmpty)
        changes = tenant.evaluate(now: 2000, only: tenant.apply(usage(2, 170_000, 2000)), newID: newID)
        #expect(changes.count == 1)
        guard case .fire(let id, let subject, let summary)? = changes.first else { return }
        #expect(subject.rule == .contextNearCapacity && subject.sessionID == "s1" && id == "inc1")
        #expect(summary.contains("86%"), "\(summary)")
        // Compacted: clear, but the incident waits out the hold-off.
        #expect(tenant.evaluate(now: 3000, only: tenant.apply(usage(3, 20_000, 3000)), newID: newID).isEmpty)
        #expect(tenant.sessions["s1"]?.compactions == 1)
        #expect(tenant.evaluate(now: 7999, newID: newID).isEmpty)
        #expect(tenant.evaluate(now: 8000, newID: newID) == [.resolve(incidentID: "inc1", subject: subject)])

        // Running, silent for a minute: stuck. Waiting on a gate: not.
        _ = tenant.apply(Self.event(4, .state, agent: "a2", at: 10_000, ["state": "running"]))
        _ = tenant.apply(Self.event(5, .approval, agent: "a2", at: 10_000, ["gateId": "g1", "status": "pending"]))
        #expect(tenant.evaluate(now: 80_000, newID: newID).isEmpty)
        _ = tenant.apply(Self.event(6, .approval, agent: "a2", at: 80_000, ["gateId": "g1", "status": "approved"]))
        // Heartbeats are no progress.
        _ = tenant.apply(Self.event(7, .state, agent: "a2", at: 80_000, ["state": "running"]))
        let stuck = tenant.evaluate(now: 80_001, newID: newID)
        #expect(stuck.count == 1)
        if case .fire(_, let subject, _)? = stuck.first { #expect(subject.rule == .agentStuck && subject.agentID == "a2") }
        _ = tenant.apply(Self.event(8, .log, agent: "a2", at: 81_000, ["message": "working"]))
        #expect(tenant.evaluate(now: 81_000, newID: newID).isEmpty, "progress, but the hold-off is not over")
        #expect(tenant.evaluate(now: 86_000, newID: newID).count == 1, "resolved")

        // The same call five times: a loop; a different call ends it.
        let call = { (seq: Int64, command: String) in
            Self.event(
                seq,
                .toolCall,
                agent: "a3",
                at: 90_000,
                ["tool": "Bash", "ok": true, "attrs": ["tool_parameters": "{\"command\":\"\(command)\"}"]]
            )
        }
        var loop: [TenantHealth.Change] = []
        for seq in Int64(9)...13 { loop += tenant.evaluate(now: 90_000, only: tenant.apply(call(seq, "make test")), newID: newID) }
        #expect(loop.count == 1)
        if case .fire(_, let subject, let summary)? = loop.first { #expect(subject.rule == .toolLoop && summary.contains("5 times"), "\(summary)") }
        // An incident event or a metric of the swarm is nobody's progress.
        #expect(tenant.apply(Self.event(14, .incident, agent: "a2", at: 90_000)).isEmpty)
        #expect(tenant.apply(Self.event(15, .metric, agent: "", at: 90_000)).isEmpty)
    }

    @Test("a tenant's bounds: past them the least recently active session, skill, agent or swarm is dropped")
    func bounds() {
        var tenant = TenantHealth(
            tenant: "t",
            limits: .init(sessions: 3, skills: 2, agents: 4, swarms: 5),
            models: ModelWindows(table: "", defaultWindow: 200_000)!,
            sampleMilliseconds: 1000
        )
        for index in 0..<6 {
            tenant.apply(
                Self.event(
                    Int64(index * 2 + 1),
                    .usage,
                    agent: "a\(index)",
                    at: Int64(index),
                    ["inputTokens": 10, "attrs": ["session.id": "s\(index)"]]
                )
            )
            tenant.apply(Self.event(Int64(index * 2 + 2), .toolCall, agent: "a\(index)", at: Int64(index), ["tool": "t\(index)", "ok": true]))
        }
        #expect(tenant.sessions.count == 3 && Set(tenant.sessions.keys) == ["s3", "s4", "s5"])
        #expect(tenant.skills.count == 2 && tenant.agents.count == 4 && tenant.swarms.count == 1)
        #expect(tenant.evicted == 3 + 4 + 2)
    }
}

import Contracts
import Foundation
import Testing

@testable import HealthMonitor

@Suite("A tenant's rules: swarm error rate, runaway cost, fatal errors, slow skills, error-rate spikes, redundant calls")
struct TenantHealthTests {
    /// A tenant with the default bounds and 1-second spike samples, under `thresholds`.
    static func tenant(_ thresholds: ThresholdValues = ThresholdValues()) -> TenantHealth {
        var tenant = TenantHealth(
            tenant: "t",
            limits: .init(),
            models: ModelWindows(table: "", defaultWindow: 200_000)!,
            sampleMilliseconds: 1000
        )
        tenant.thresholds.tenant = thresholds
        return tenant
    }

    /// The incidents `changes` open, as the store keeps them.
    static func fired(_ changes: [TenantHealth.Change]) -> [Incident] {
        changes.compactMap { change -> Incident? in
            guard case .fire(let id, let subject, let summary) = change else { return nil }
            return Incident(tenant: "t", id: id, subject: subject, summary: summary, firedAt: Date(timeIntervalSince1970: 0))
        }
    }

    @Test("swarm_error_rate: not before 20 events in five minutes, fires from 25% errors, resolves after the window and hold-off")
    func swarmErrorRate() throws {
        var tenant = Self.tenant()
        var ids = 0
        func newID() -> String {
            ids += 1
            return "inc\(ids)"
        }
        func record(_ seq: Int64, _ severity: BusSeverity) -> [TenantHealth.Change] {
            let event = HealthRulesTests.event(seq, .log, at: 600_000 + seq, severity: severity)
            return tenant.evaluate(now: event.at, only: tenant.apply(event), newID: newID)
        }
        // Minute 10 (600 000 ms): 20 clean events, then errors until a quarter of them fail.
        for seq in Int64(1)...20 { #expect(record(seq, .info).isEmpty, "clean event \(seq)") }
        for seq in Int64(21)...26 { #expect(record(seq, .error).isEmpty, "\(seq - 20) errors of \(seq) events is below 25%") }
        let changes = record(27, .error)
        #expect(changes.count == 1, "\(changes)")
        let incidents = Self.fired(changes)
        let incident = try #require(incidents.first)
        #expect(incidents.count == 1)
        #expect(incident.rule == "swarm_error_rate" && incident.status == .firing && incident.severity == "critical")
        #expect(incident.fingerprint == "swarm_error_rate|swarm:w" && incident.swarmID == "w" && incident.agentID == nil)
        #expect(incident.summary == "Swarm w is degraded: 26% of its events in the last 5 minutes are errors", "\(incident.summary)")
        // An error is no fatal error: nothing else fired (critical_error needs a fatal event).
        #expect(tenant.alerts.count == 1)

        // Minute 14 still sees minute 10; minute 15 does not: clear, then resolved after the 60 s hold-off.
        #expect(tenant.evaluate(now: 899_999, newID: newID).isEmpty)
        #expect(tenant.evaluate(now: 900_000, newID: newID).isEmpty, "clear, but the hold-off is not over")
        let subject = try #require(incident.subject)
        #expect(tenant.evaluate(now: 960_000, newID: newID) == [.resolve(incidentID: incident.id, subject: subject)])
    }

    @Test("runaway_cost: usage cost over the last ten minutes, per hour, at or above $50 fires; negative and non-usage costs count nothing")
    func runawayCost() throws {
        var tenant = Self.tenant()
        var ids = 0
        func newID() -> String {
            ids += 1
            return "inc\(ids)"
        }
        func apply(_ event: HealthEvent) -> [TenantHealth.Change] {
            tenant.evaluate(now: event.at, only: tenant.apply(event), newID: newID)
        }
        // $4 in ten minutes is $24 per hour.
        #expect(apply(HealthRulesTests.event(1, .usage, at: 600_000, ["costUsd": 4.0])).isEmpty)
        // A negative cost does not lower it; a cost on something other than usage does not raise it.
        #expect(apply(HealthRulesTests.event(2, .usage, at: 600_001, ["costUsd": -100.0])).isEmpty)
        #expect(apply(HealthRulesTests.event(3, .toolCall, at: 600_002, ["tool": "Bash", "ok": true, "costUsd": 100.0])).isEmpty)
        #expect(tenant.swarms["w"]?.costPerHour(now: 600_002) == 24)
        // $8.50 in ten minutes: $51 per hour.
        let changes = apply(HealthRulesTests.event(4, .usage, at: 600_003, ["costUsd": 4.5]))
        #expect(changes.count == 1, "\(changes)")
        let incidents = Self.fired(changes)
        let incident = try #require(incidents.first)
        #expect(incidents.count == 1)
        #expect(incident.rule == "runaway_cost" && incident.status == .firing && incident.severity == "critical")
        #expect(incident.fingerprint == "runaway_cost|swarm:w" && incident.swarmID == "w")
        #expect(incident.summary == "Swarm w is spending $51.00 per hour", "\(incident.summary)")

        // Ten minutes on, the spend has left the window: clear, then resolved after the hold-off.
        #expect(tenant.evaluate(now: 1_199_999, newID: newID).isEmpty, "minute 19 still counts minute 10")
        #expect(tenant.evaluate(now: 1_200_000, newID: newID).isEmpty, "clear, but the hold-off is not over")
        let subject = try #require(incident.subject)
        #expect(tenant.evaluate(now: 1_260_000, newID: newID) == [.resolve(incidentID: incident.id, subject: subject)])
    }

    @Test("critical_error: a fatal event fires for its agent for one minute; an error-level event fires nothing")
    func criticalError() throws {
        var tenant = Self.tenant(ThresholdValues(resolveAfterSeconds: 0))
        var ids = 0
        func newID() -> String {
            ids += 1
            return "inc\(ids)"
        }
        let error = HealthRulesTests.event(1, .log, agent: "a2", at: 1000, severity: .error, ["message": "retrying"])
        #expect(tenant.evaluate(now: 1000, only: tenant.apply(error), newID: newID).isEmpty, "an error is not fatal")
        let fatal = HealthRulesTests.event(2, .log, agent: "a1", at: 2000, severity: .fatal, ["message": "out of memory"])
        let changes = tenant.evaluate(now: 2000, only: tenant.apply(fatal), newID: newID)
        #expect(changes.count == 1, "\(changes)")
        let incidents = Self.fired(changes)
        let incident = try #require(incidents.first)
        #expect(incidents.count == 1)
        #expect(incident.rule == "critical_error" && incident.status == .firing && incident.severity == "critical")
        #expect(incident.agentID == "a1" && incident.swarmID == "w")
        #expect(incident.fingerprint == "critical_error|agent:" + TenantHealth.agentKey(swarm: "w", agent: "a1"))
        #expect(incident.summary == "a1 in swarm w reported a fatal error", "\(incident.summary)")

        // Within the minute it holds; a minute after the fatal event it resolves (no hold-off here).
        #expect(tenant.evaluate(now: 61_999, newID: newID).isEmpty)
        let subject = try #require(incident.subject)
        #expect(tenant.evaluate(now: 62_000, newID: newID) == [.resolve(incidentID: incident.id, subject: subject)])
    }

    @Test("skill_latency_high: needs five calls in the hour and a p95 at the skill's threshold; another skill keeps the default threshold")
    func skillLatencyHigh() throws {
        var tenant = Self.tenant()
        let grep = SkillID.make(swarm: "w", tool: "Grep")
        tenant.thresholds.skills[grep] = ThresholdValues(skillP95LatencyMs: 1000, resolveAfterSeconds: 0)
        var ids = 0
        func newID() -> String {
            ids += 1
            return "inc\(ids)"
        }
        func call(_ seq: Int64, _ tool: String) -> [TenantHealth.Change] {
            let event = HealthRulesTests.event(seq, .toolCall, at: 1_000_000 + seq, ["tool": tool, "ok": true, "latencyMs": 5000])
            return tenant.evaluate(now: event.at, only: tenant.apply(event), newID: newID)
        }
        for seq in Int64(1)...4 { #expect(call(seq, "Grep").isEmpty, "\(seq) slow calls are too few") }
        let changes = call(5, "Grep")
        #expect(changes.count == 1, "\(changes)")
        let incidents = Self.fired(changes)
        let incident = try #require(incidents.first)
        #expect(incidents.count == 1)
        #expect(incident.rule == "skill_latency_high" && incident.status == .firing && incident.severity == "warning")
        #expect(incident.skillID == grep && incident.swarmID == "w" && incident.fingerprint == "skill_latency_high|skill:\(grep)")
        let p95 = Int(LatencyHistogram.value(ofBucket: LatencyHistogram.bucket(5000)))
        #expect(incident.summary == "Grep in swarm w is slow: p95 \(p95) ms over the last hour", "\(incident.summary)")
        // The same latencies on Glob are under the default 60 s.
        for seq in Int64(6)...11 { #expect(call(seq, "Glob").isEmpty) }

        // An hour and a slot later the calls have left the window: resolved (the skill's hold-off is 0).
        let subject = try #require(incident.subject)
        #expect(tenant.evaluate(now: 1_000_000 + 3_900_000, newID: newID) == [.resolve(incidentID: incident.id, subject: subject)])
    }

    @Test("skill_failure_spike under the ceiling: 5% through warm-up, then two windows at 40% fire by z-score; a jump inside warm-up does not")
    func skillSpikeByZScore() throws {
        // The ceiling (90%) is far above 40%: only the z-score against the baseline can fire.
        var tenant = Self.tenant(ThresholdValues(skillErrorRate: 0.9, resolveAfterSeconds: 0))
        var ids = 0
        func newID() -> String {
            ids += 1
            return "inc\(ids)"
        }
        var seq: Int64 = 0
        // One sample interval (a second): 20 calls of Read and of Glob, the first `errors` of each failing; then every rule.
        func window(_ index: Int64, read readErrors: Int, glob globErrors: Int) -> [TenantHealth.Change] {
            let start = 1_000_000 + index * 1000
            for (tool, errors) in [("Read", readErrors), ("Glob", globErrors)] {
                for call in 0..<20 {
                    seq += 1
                    tenant.apply(HealthRulesTests.event(seq, .toolCall, at: start + Int64(call), ["tool": tool, "ok": call >= errors]))
                }
            }
            return tenant.evaluate(now: start + 1000, newID: newID)
        }
        let read = SkillID.make(swarm: "w", tool: "Read")
        let glob = SkillID.make(swarm: "w", tool: "Glob")
        // Warm-up (five samples): Read at 5%; Glob clean, then two windows in a row at 40%, which raise nothing.
        for index in Int64(0)..<5 {
            #expect(window(index, read: 1, glob: index < 3 ? 0 : 8).isEmpty, "warm-up window \(index)")
        }
        #expect(tenant.skills[glob]?.detector.samples == 5 && tenant.skills[glob]?.spiking == false)
        #expect(tenant.skills[read]?.detector.samples == 5)

        #expect(window(5, read: 8, glob: 0).isEmpty, "one window at 40% is not yet a spike")
        let changes = window(6, read: 8, glob: 0)
        #expect(changes.count == 1, "\(changes)")
        let incidents = Self.fired(changes)
        let incident = try #require(incidents.first)
        #expect(incidents.count == 1)
        #expect(incident.rule == "skill_failure_spike" && incident.status == .firing && incident.severity == "warning")
        #expect(incident.skillID == read && incident.swarmID == "w" && incident.fingerprint == "skill_failure_spike|skill:\(read)")
        // 5 × 1 + 2 × 8 errors of 7 × 20 calls.
        #expect(incident.summary == "Read in swarm w is failing: 15% of 140 calls in the last hour (baseline 5%)", "\(incident.summary)")
        let mean = try #require(tenant.skills[read]?.detector.mean)
        #expect(abs(mean - 0.05) < 1e-9, "the breaching windows leave the baseline where it was: \(mean)")

        // Back at 5%: clear at once (no hold-off here).
        let subject = try #require(incident.subject)
        #expect(window(7, read: 1, glob: 0) == [.resolve(incidentID: incident.id, subject: subject)])
    }

    @Test("skill_failure_spike when the evaluation comes late: the spike's last window is followed by silence, it fires all the same, then resolves")
    func skillSpikeEvaluatedLate() throws {
        var tenant = Self.tenant(ThresholdValues(skillErrorRate: 0.9, resolveAfterSeconds: 0))
        var ids = 0
        func newID() -> String {
            ids += 1
            return "inc\(ids)"
        }
        var seq: Int64 = 0
        // One sample interval: 20 calls of Read, the first `errors` failing; no evaluation.
        func window(_ index: Int64, errors: Int) {
            for call in 0..<20 {
                seq += 1
                tenant.apply(
                    HealthRulesTests.event(seq, .toolCall, at: 1_000_000 + index * 1000 + Int64(call), ["tool": "Read", "ok": call >= errors])
                )
            }
        }
        for index in Int64(0)..<5 { window(index, errors: 1) }
        window(5, errors: 8)
        window(6, errors: 8)
        // The next evaluation only three intervals later: window 6 closes breaching (the second in
        // a row), then the quiet intervals clear the condition, but the spike was there.
        let changes = tenant.evaluate(now: 1_000_000 + 9500, newID: newID)
        let incident = try #require(Self.fired(changes).first, "\(changes)")
        #expect(incident.rule == "skill_failure_spike")
        let subject = try #require(incident.subject)
        #expect(tenant.evaluate(now: 1_000_000 + 10_500, newID: newID) == [.resolve(incidentID: incident.id, subject: subject)])
    }

    @Test("redundancy_spike: the same Read of one file again and again fires from the tenth call; distinct calls do not; it resolves below 40%")
    func redundancySpike() throws {
        var tenant = Self.tenant(ThresholdValues(resolveAfterSeconds: 0))
        var ids = 0
        func newID() -> String {
            ids += 1
            return "inc\(ids)"
        }
        func call(_ seq: Int64, agent: String, session: String, _ tool: String, _ parameters: String) -> [TenantHealth.Change] {
            let event = HealthRulesTests.event(
                seq,
                .toolCall,
                agent: agent,
                at: 1_000_000 + seq,
                ["tool": tool, "ok": true, "attrs": ["session.id": session, "tool_parameters": parameters]]
            )
            return tenant.evaluate(now: event.at, only: tenant.apply(event), newID: newID)
        }
        let read = #"{"file_path":"notes.md"}"#
        // Another agent reads twelve different files: nothing is redundant.
        for seq in Int64(1)...12 {
            #expect(call(seq, agent: "a2", session: "s2", "Read", #"{"file_path":"f\#(seq).md"}"#).isEmpty)
        }
        #expect(tenant.sessions["s2"]?.redundancyScore == 0)

        // Read notes.md three times, a Grep, three more, a Grep, twice more (never five identical calls in a row: no
        // tool_loop). Below ten calls there is no score; the tenth makes 7 redundant of 10.
        for seq in Int64(13)...21 {
            if seq % 4 == 0 {
                #expect(call(seq, agent: "a1", session: "s1", "Grep", #"{"pattern":"p\#(seq)"}"#).isEmpty, "call \(seq - 12) of s1")
            } else {
                #expect(call(seq, agent: "a1", session: "s1", "Read", read).isEmpty, "call \(seq - 12) of s1")
            }
        }
        let changes = call(22, agent: "a1", session: "s1", "Read", read)
        #expect(changes.count == 1, "\(changes)")
        let incidents = Self.fired(changes)
        let incident = try #require(incidents.first)
        #expect(incidents.count == 1)
        #expect(incident.rule == "redundancy_spike" && incident.status == .firing && incident.severity == "warning")
        #expect(incident.sessionID == "s1" && incident.agentID == "a1" && incident.swarmID == "w")
        #expect(incident.fingerprint == "redundancy_spike|session:s1")
        #expect(incident.summary == "a1 repeats itself: 70% of its recent tool calls are redundant", "\(incident.summary)")
        #expect(tenant.sessions["s1"]?.warnings(nearCapacityPercent: 80, redundancy: 0.4) == ["redundancy_spike"])

        // Distinct calls dilute it: 7 of 17 still holds, 7 of 18 is below 40%.
        for seq in Int64(23)...29 { #expect(call(seq, agent: "a1", session: "s1", "Grep", #"{"pattern":"p\#(seq)"}"#).isEmpty) }
        let subject = try #require(incident.subject)
        #expect(call(30, agent: "a1", session: "s1", "Grep", #"{"pattern":"p30"}"#) == [.resolve(incidentID: incident.id, subject: subject)])
    }
}

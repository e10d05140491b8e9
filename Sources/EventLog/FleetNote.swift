import Contracts

/// What an append tells the fleet (`fleet_note`, event log migration 12), as postgres-nio binds
/// it: arrays without NULLs ('' and 0 are none). Pure.
enum FleetNote {
    /// The fields of a group's state events, sparse: each one's position in the group (from 1)
    /// and its fields, for `append_events`, which sums the group up per agent itself (it alone
    /// knows which events were duplicates).
    struct States: Equatable {
        var ordinals: [Int32] = []
        var states: [String] = []
        var summaries: [String] = []
        var workers: [Bool] = []
        var tmuxSessions: [String] = []
        var hosts: [String] = []

        init(_ events: [PreparedEvent]) {
            for (index, event) in events.enumerated() {
                guard let fields = Fields(event) else { continue }
                self.ordinals.append(Int32(index + 1))
                self.states.append(fields.state)
                self.summaries.append(fields.summary ?? "")
                self.workers.append(fields.worker)
                self.tmuxSessions.append(fields.tmuxSession)
                self.hosts.append(fields.host)
            }
        }
    }

    /// A state event's fields as the fleet keeps them; nil for another event, or a state event
    /// without a state.
    struct Fields {
        var state: String
        /// Nil when the event gives none (the fleet keeps the last one given).
        var summary: String?
        var worker: Bool
        var tmuxSession: String
        var host: String

        init?(_ event: PreparedEvent) {
            guard let fields = event.fleetState, let state = FleetNote.text(fields.state, max: EventLogAppender.maxFleetState),
                !state.isEmpty
            else { return nil }
            self.state = state
            self.summary = FleetNote.text(fields.taskSummary, max: EventLogAppender.maxTaskSummary).flatMap { $0.isEmpty ? nil : $0 }
            self.worker = fields.attrs?.worker == true
            // Names are short already (EventFrame.State.Attributes).
            self.tmuxSession = FleetNote.text(fields.attrs?.tmuxSession, max: .max) ?? ""
            self.host = FleetNote.text(fields.attrs?.host, max: .max) ?? ""
        }
    }

    /// Committed events summed up per agent (agent '' is no agent's), for `fleet_note` itself:
    /// the swarm of each one's latest event, its events and errors, its latest state event's
    /// fields and the latest summary any gave.
    struct Agents: Equatable {
        var agents: [String] = []
        var swarms: [String] = []
        var lastSeqs: [Int64] = []
        var events: [Int64] = []
        var errors: [Int64] = []
        var stateSeqs: [Int64] = []
        var states: [String] = []
        var summaries: [String] = []
        var workers: [Bool] = []
        var tmuxSessions: [String] = []
        var hosts: [String] = []

        init(_ committed: [CommittedEvent]) {
            var position: [String: Int] = [:]
            for item in committed.sorted(by: { $0.seq < $1.seq }) where !item.event.agentID.isEmpty {
                let event = item.event
                let at =
                    position[event.agentID]
                    ?? {
                        position[event.agentID] = self.agents.count
                        self.agents.append(event.agentID)
                        self.swarms.append("")
                        self.lastSeqs.append(0)
                        self.events.append(0)
                        self.errors.append(0)
                        self.stateSeqs.append(0)
                        self.states.append("")
                        self.summaries.append("")
                        self.workers.append(false)
                        self.tmuxSessions.append("")
                        self.hosts.append("")
                        return self.agents.count - 1
                    }()
                self.swarms[at] = event.swarmID
                self.lastSeqs[at] = item.seq
                self.events[at] += 1
                if event.severity.rawValue >= BusSeverity.error.rawValue { self.errors[at] += 1 }
                guard let fields = Fields(event) else { continue }
                self.stateSeqs[at] = item.seq
                self.states[at] = fields.state
                if let summary = fields.summary { self.summaries[at] = summary }
                self.workers[at] = fields.worker
                self.tmuxSessions[at] = fields.tmuxSession
                self.hosts[at] = fields.host
            }
        }
    }

    /// `value` as Postgres text takes it: without U+0000 (which a frame may carry escaped, and
    /// text refuses: one such state would fail its tenant's appends), cut to `max` characters
    /// with an ellipsis.
    static func text(_ value: String?, max: Int) -> String? {
        guard var value else { return nil }
        if value.utf8.contains(0) { value.unicodeScalars.removeAll { $0 == "\u{0}" } }
        return value.count > max ? String(value.prefix(max - 1)) + "…" : value
    }
}

public import Foundation
import PostgresNIO

/// One agent of the fleet as the appends keep it (`fleet_agents`, `fleet_minutes`).
public struct FleetAgent: Sendable {
    public var agentID: String
    /// The swarm of its latest event.
    public var swarmID: String
    /// The `state` of its latest state event; nil before it sent one.
    public var state: String?
    /// The latest task summary a state event gave (cut to ``EventLogAppender/maxTaskSummary``).
    public var taskSummary: String?
    /// Its latest state event said it takes requests (`attrs.worker`).
    public var acceptsRequests: Bool
    /// The tmux session and host its latest state event named.
    public var tmuxSession: String?
    public var host: String?
    /// When its state last changed (or it was first seen).
    public var stateChangedAt: Date
    /// When its latest event was committed.
    public var lastSeenAt: Date
    /// Its latest event's seq.
    public var lastSeq: Int64
    /// Its events, and those of severity error or worse, committed in the last hour.
    public var eventsLastHour: Int64
    public var errorsLastHour: Int64

    public init(
        agentID: String,
        swarmID: String,
        state: String? = nil,
        taskSummary: String? = nil,
        acceptsRequests: Bool = false,
        tmuxSession: String? = nil,
        host: String? = nil,
        stateChangedAt: Date,
        lastSeenAt: Date,
        lastSeq: Int64 = 0,
        eventsLastHour: Int64 = 0,
        errorsLastHour: Int64 = 0
    ) {
        self.agentID = agentID
        self.swarmID = swarmID
        self.state = state
        self.taskSummary = taskSummary
        self.acceptsRequests = acceptsRequests
        self.tmuxSession = tmuxSession
        self.host = host
        self.stateChangedAt = stateChangedAt
        self.lastSeenAt = lastSeenAt
        self.lastSeq = lastSeq
        self.eventsLastHour = eventsLastHour
        self.errorsLastHour = errorsLastHour
    }
}

extension EventLogReader {
    /// `tenant`'s agents, the most recently seen first, at most `limit`: all of them, those of
    /// a swarm spelled one of `swarms`, or those whose id is one of `agents` (ids are compared
    /// as bytes: callers pass the spellings they accept).
    public func fleet(tenant: String, swarms: [String]? = nil, agents: [String]? = nil, limit: Int) async throws -> [FleetAgent] {
        let rows = try await self.client.query(
            """
            SELECT a.agent_id, a.swarm_id, a.state, a.task_summary, a.worker, a.tmux_session, a.host, a.state_changed_at,
                   a.last_seen_at, a.last_seq, coalesce(h.events, 0)::int8, coalesce(h.errors, 0)::int8
            FROM (
                SELECT * FROM \(unescaped: self.schema).fleet_agents
                WHERE tenant_id = \(tenant) AND (\(swarms)::text[] IS NULL OR swarm_id = ANY(\(swarms)::text[]))
                  AND (\(agents)::text[] IS NULL OR agent_id = ANY(\(agents)::text[]))
                ORDER BY last_seen_at DESC, agent_id LIMIT \(limit)
            ) a
            -- The hour of the agents listed only, each through the minutes' primary key.
            LEFT JOIN LATERAL (
                SELECT sum(m.events) AS events, sum(m.errors) AS errors FROM \(unescaped: self.schema).fleet_minutes m
                WHERE m.tenant_id = a.tenant_id AND m.agent_id = a.agent_id AND m.minute > now() - interval '1 hour'
            ) h ON true
            ORDER BY a.last_seen_at DESC, a.agent_id
            """,
            logger: self.logger
        )
        var agents: [FleetAgent] = []
        for try await row in rows {
            let (id, swarm, state, summary, worker, tmux, host, changed, seen, seq, events, errors) = try row.decode(
                (String, String, String?, String?, Bool, String?, String?, Date, Date, Int64, Int64, Int64).self
            )
            agents.append(
                FleetAgent(
                    agentID: id,
                    swarmID: swarm,
                    state: state,
                    taskSummary: summary,
                    acceptsRequests: worker,
                    tmuxSession: tmux,
                    host: host,
                    stateChangedAt: changed,
                    lastSeenAt: seen,
                    lastSeq: seq,
                    eventsLastHour: events,
                    errorsLastHour: errors
                )
            )
        }
        return agents
    }
}

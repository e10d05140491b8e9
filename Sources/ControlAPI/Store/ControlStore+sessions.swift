import Foundation
import PostgresNIO
import ServiceKit

extension ControlStore {
    /// A session that ended when another was opened: its token must be revoked and, unless
    /// its agent has a session again, its command queue deleted.
    struct EndedSession: Sendable, Equatable {
        var session: String
        var swarm: String
        var agent: String
    }

    /// Opens a session for one agent: ends the tenant's sessions idle longer than `idleAfter`
    /// and the agent's open one, then refuses (429) when the tenant already has `maxOpen`
    /// open sessions. Serialized per tenant, so the cap holds across replicas. Answers the
    /// sessions it ended.
    func openSession(
        tenant: String,
        keyID: String,
        session: String,
        swarm: String,
        agent: String,
        maxOpen: Int,
        idleAfter: Duration
    ) async throws -> [EndedSession] {
        let idleSeconds = Int(idleAfter.components.seconds)
        return try await self.client.transaction(logger: self.logger) { connection in
            try await connection.perform("SELECT pg_advisory_xact_lock(hashtext('agent-sessions'), hashtext(\(tenant)))", logger: self.logger)
            var ended: [EndedSession] = []
            for try await (session, swarm, agent) in try await connection.query(
                """
                UPDATE agent_sessions
                SET ended_at = now(),
                    end_reason = CASE WHEN swarm_id = \(swarm) AND agent_id = \(agent) THEN 'superseded' ELSE 'idle' END
                WHERE tenant_id = \(tenant) AND ended_at IS NULL
                  AND ((swarm_id = \(swarm) AND agent_id = \(agent)) OR seen_at < now() - make_interval(secs => \(idleSeconds)))
                RETURNING session_id, swarm_id, agent_id
                """,
                logger: self.logger
            ).decode((String, String, String).self) {
                ended.append(EndedSession(session: session, swarm: swarm, agent: agent))
            }
            var open = 0
            for try await count in try await connection.query(
                "SELECT count(*) FROM agent_sessions WHERE tenant_id = \(tenant) AND ended_at IS NULL",
                logger: self.logger
            ).decode(Int.self) {
                open = count
            }
            guard open < maxOpen else {
                throw APIError(
                    .rateLimited,
                    "this tenant has \(open) open agent sessions, the most it may have (control.max-agent-sessions); end some first",
                    retryAfterSeconds: 60
                )
            }
            // The agent's earlier sessions are summed up by the one that replaces them; the last
            // session of every other agent stays (it says whether that agent is gone).
            try await connection.query(
                """
                DELETE FROM agent_sessions WHERE tenant_id = \(tenant) AND ended_at IS NOT NULL
                  AND swarm_id = \(swarm) AND agent_id = \(agent)
                """,
                logger: self.logger
            )
            try await connection.query(
                """
                INSERT INTO agent_sessions (tenant_id, session_id, swarm_id, agent_id, key_id)
                VALUES (\(tenant), \(session), \(swarm), \(agent), \(keyID))
                """,
                logger: self.logger
            )
            return ended
        }
    }

    /// Why a session ended (`agent_sessions.end_reason`).
    enum EndReason: String {
        /// Its connector said its process is gone: the only reason that takes the agent out of
        /// swarm controls.
        case exited
        /// Its ingest key was deleted.
        case keyRevoked = "key-revoked"
        /// Its queue could not be made (no token was given).
        case idle
    }

    /// Ends an open session. False if it had already ended (or never existed).
    func endSession(tenant: String, session: String, reason: EndReason, exitStatus: Int? = nil) async throws -> Bool {
        let rows = try await self.client.write(
            """
            UPDATE agent_sessions SET ended_at = now(), end_reason = \(reason.rawValue), exit_status = \(exitStatus)
            WHERE tenant_id = \(tenant) AND session_id = \(session) AND ended_at IS NULL
            RETURNING 1
            """,
            logger: self.logger
        )
        return !rows.isEmpty
    }

    /// What a poll finds of its session.
    enum Touch {
        /// Ended: its token must no longer work.
        case ended
        /// Open, opened with that key (nil for a session from before keys were recorded).
        case open(keyID: String?)
    }

    /// Records a poll of an open session.
    func touchSession(tenant: String, session: String) async throws -> Touch {
        // bare write: at every poll; a lost `seen_at` costs nothing, and the rows answer only
        // whether the session is open, which holds whether or not this commits.
        let rows = try await self.client.query(
            """
            UPDATE agent_sessions SET seen_at = now()
            WHERE tenant_id = \(tenant) AND session_id = \(session) AND ended_at IS NULL
            RETURNING key_id
            """,
            logger: self.logger
        )
        for try await keyID in rows.decode(String?.self) { return .open(keyID: keyID) }
        return .ended
    }

    /// The swarms in which `agent` has an open session, by name.
    func openSwarms(tenant: String, agent: String) async throws -> [String] {
        var swarms: [String] = []
        for try await swarm in try await self.client.query(
            """
            SELECT DISTINCT swarm_id FROM agent_sessions
            WHERE tenant_id = \(tenant) AND agent_id = \(agent) AND ended_at IS NULL ORDER BY swarm_id
            """,
            logger: self.logger
        ).decode(String.self) {
            swarms.append(swarm)
        }
        return swarms
    }

    /// The agents of a swarm by what their connectors said: those with an open session, and
    /// those whose last session ended because their process is gone (and none opened since).
    func sessions(tenant: String, swarm: String) async throws -> (open: Set<String>, gone: Set<String>) {
        var open: Set<String> = []
        var gone: Set<String> = []
        for try await (agent, ended, reason) in try await self.client.query(
            """
            SELECT DISTINCT ON (agent_id) agent_id, ended_at IS NOT NULL, end_reason FROM agent_sessions
            WHERE tenant_id = \(tenant) AND swarm_id = \(swarm)
            ORDER BY agent_id, opened_at DESC
            """,
            logger: self.logger
        ).decode((String, Bool, String?).self) {
            if !ended {
                open.insert(agent)
            } else if reason == "exited" {
                gone.insert(agent)
            }
        }
        return (open, gone)
    }
}

import Contracts
public import ServiceKit

/// Ingest's schema (`ingest` by default): tenants with their sequence counters, ingest keys, the event log and
/// its de-duplication index, ACP threads and envelopes. From version 3 the event log and the
/// envelopes are partitioned by day (UTC) of commit, so retention drops whole partitions.
public enum EventLogMigrations {
    public static let all: [Migration] = [
        Migration(
            version: 1,
            name: "tenants, keys, event log",
            sql: """
                CREATE TABLE tenants (
                    tenant_id text PRIMARY KEY,
                    -- The next per-tenant seq. Its row lock is what serializes a tenant's
                    -- appends, so commit order is seq order.
                    next_seq bigint NOT NULL DEFAULT 1,
                    created_at timestamptz NOT NULL DEFAULT now()
                );
                CREATE TABLE ingest_keys (
                    key_id text PRIMARY KEY,
                    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
                    name text NOT NULL,
                    -- SHA-256 of the secret; the secret itself is shown once, at creation.
                    secret_sha256 bytea NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    revoked_at timestamptz
                );
                CREATE TABLE events (
                    tenant_id text NOT NULL,
                    seq bigint NOT NULL,
                    msg_id text NOT NULL,
                    swarm_id text NOT NULL,
                    agent_id text NOT NULL,
                    kind smallint NOT NULL,
                    severity smallint NOT NULL,
                    occurred_at timestamptz NOT NULL,
                    committed_at timestamptz NOT NULL,
                    -- The client frame as streamed (UTF-8 JSON), rendered once at commit.
                    frame bytea NOT NULL,
                    PRIMARY KEY (tenant_id, seq)
                );
                CREATE UNIQUE INDEX events_msg_id ON events (tenant_id, msg_id);
                CREATE INDEX events_committed_at ON events (committed_at);
                """
        ),
        Migration(
            version: 2,
            name: "ACP threads and envelopes",
            sql: """
                CREATE TABLE acp_threads (
                    tenant_id text NOT NULL,
                    thread_id text NOT NULL,
                    -- The next per-thread seq; its row lock serializes appends to the thread.
                    next_seq bigint NOT NULL DEFAULT 1,
                    PRIMARY KEY (tenant_id, thread_id)
                );
                CREATE TABLE acp_envelopes (
                    tenant_id text NOT NULL,
                    thread_id text NOT NULL,
                    thread_seq bigint NOT NULL,
                    -- The tenant-wide seq of the same event in events.
                    seq bigint NOT NULL,
                    session_id text,
                    direction smallint NOT NULL,
                    kind smallint NOT NULL,
                    msg_id text NOT NULL,
                    checksum bytea NOT NULL,
                    received_at timestamptz NOT NULL,
                    -- The JSON-RPC message exactly as received.
                    body bytea NOT NULL,
                    PRIMARY KEY (tenant_id, thread_id, thread_seq)
                );
                """
        ),
        Migration(
            version: 3,
            name: "event log and envelopes partitioned by day",
            sql: """
                -- Creates parent's partition for one UTC day, named <parent>_pYYYYMMDD; false if
                -- it exists. Made apart and then attached: ATTACH takes SHARE UPDATE EXCLUSIVE
                -- on the parent, which appends and reads do not wait for (CREATE TABLE …
                -- PARTITION OF would take ACCESS EXCLUSIVE). The advisory lock keeps replicas
                -- from creating the same one at once.
                CREATE FUNCTION create_day_partition(parent text, day date) RETURNS boolean
                    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
                DECLARE
                    child text := parent || '_p' || to_char(day, 'YYYYMMDD');
                BEGIN
                    PERFORM pg_advisory_xact_lock(hashtext(current_schema() || '.partitions'));
                    IF to_regclass(format('%I.%I', current_schema(), child)) IS NOT NULL THEN
                        RETURN false;
                    END IF;
                    EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                                   current_schema(), child, current_schema(), parent);
                    EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                                   current_schema(), parent, current_schema(), child,
                                   day::timestamp AT TIME ZONE 'UTC', (day + 1)::timestamp AT TIME ZONE 'UTC');
                    RETURN true;
                END
                $$;

                ALTER TABLE events RENAME TO events_unpartitioned;
                ALTER INDEX events_pkey RENAME TO events_unpartitioned_pkey;
                ALTER INDEX events_msg_id RENAME TO events_unpartitioned_msg_id;
                ALTER INDEX events_committed_at RENAME TO events_unpartitioned_committed_at;
                CREATE TABLE events (
                    tenant_id text NOT NULL,
                    seq bigint NOT NULL,
                    msg_id text NOT NULL,
                    swarm_id text NOT NULL,
                    agent_id text NOT NULL,
                    kind smallint NOT NULL,
                    severity smallint NOT NULL,
                    occurred_at timestamptz NOT NULL,
                    committed_at timestamptz NOT NULL,
                    frame bytea NOT NULL,
                    PRIMARY KEY (tenant_id, seq, committed_at)
                ) PARTITION BY RANGE (committed_at);
                -- Not unique (a partitioned unique index must hold committed_at): appends look
                -- msg_ids up under the tenant's row lock, so a duplicate is never inserted.
                CREATE INDEX events_msg_id ON events (tenant_id, msg_id);
                SELECT create_day_partition('events', day)
                FROM (SELECT DISTINCT (committed_at AT TIME ZONE 'UTC')::date AS day FROM events_unpartitioned) AS days;
                INSERT INTO events SELECT * FROM events_unpartitioned;
                DROP TABLE events_unpartitioned;

                ALTER TABLE acp_envelopes RENAME TO acp_envelopes_unpartitioned;
                ALTER INDEX acp_envelopes_pkey RENAME TO acp_envelopes_unpartitioned_pkey;
                CREATE TABLE acp_envelopes (
                    tenant_id text NOT NULL,
                    thread_id text NOT NULL,
                    thread_seq bigint NOT NULL,
                    seq bigint NOT NULL,
                    session_id text,
                    direction smallint NOT NULL,
                    kind smallint NOT NULL,
                    msg_id text NOT NULL,
                    checksum bytea NOT NULL,
                    received_at timestamptz NOT NULL,
                    body bytea NOT NULL,
                    PRIMARY KEY (tenant_id, thread_id, thread_seq, received_at)
                ) PARTITION BY RANGE (received_at);
                CREATE INDEX acp_envelopes_seq ON acp_envelopes (tenant_id, seq);
                SELECT create_day_partition('acp_envelopes', day)
                FROM (SELECT DISTINCT (received_at AT TIME ZONE 'UTC')::date AS day FROM acp_envelopes_unpartitioned) AS days;
                INSERT INTO acp_envelopes SELECT * FROM acp_envelopes_unpartitioned;
                DROP TABLE acp_envelopes_unpartitioned;
                -- The copied partitions have no statistics until autovacuum gets to them; until
                -- then the planner takes a large partition for an empty one (seen: a
                -- de-duplication lookup of 1600 ids taking a second on 4 million rows).
                ANALYZE events;
                ANALYZE acp_envelopes;
                """
        ),
        Migration(
            version: 4,
            name: "ACP threads know their agent and title",
            sql: """
                -- The agent of the thread's first envelope and the title its messages gave it
                -- (seed 003's thread list): set by the appender, read by acp.cache.threads.
                ALTER TABLE acp_threads ADD COLUMN swarm_id text, ADD COLUMN agent_id text, ADD COLUMN title text;
                """
        ),
        Migration(
            version: 5,
            name: "ACP envelopes keep their JSON-RPC id",
            sql: """
                -- The id of a request or answer as JSON text (`5`, `"p-1"`): an answer is tied to
                -- the agent's request it answers through it, without parsing stored bodies.
                ALTER TABLE acp_envelopes ADD COLUMN rpc_id text;
                CREATE INDEX acp_envelopes_agent_requests ON acp_envelopes (tenant_id, thread_id, rpc_id, thread_seq)
                    WHERE direction = 1 AND kind = 1;
                """
        ),
        Migration(
            version: 6,
            name: "ACP threads of before version 4 know their agent",
            sql: """
                -- A thread is its first envelope's agent's: threads from before that was recorded
                -- get it from their oldest envelope still kept.
                UPDATE acp_threads t SET swarm_id = f.swarm_id, agent_id = f.agent_id
                FROM (
                    SELECT DISTINCT ON (a.tenant_id, a.thread_id) a.tenant_id, a.thread_id, e.swarm_id, e.agent_id
                    FROM acp_envelopes a
                    JOIN events e ON e.tenant_id = a.tenant_id AND e.seq = a.seq AND e.committed_at = a.received_at
                    WHERE (a.tenant_id, a.thread_id) IN (SELECT tenant_id, thread_id FROM acp_threads WHERE agent_id IS NULL)
                    ORDER BY a.tenant_id, a.thread_id, a.thread_seq
                ) f
                WHERE t.tenant_id = f.tenant_id AND t.thread_id = f.thread_id AND t.agent_id IS NULL;
                """
        ),
        Migration(
            version: 7,
            name: "an append in one statement",
            sql: #"""
                -- A group of a tenant's events (none an ACP envelope) appended in one round trip:
                -- the tenant's row locked, msg_ids committed within the de-duplication window
                -- (p_dedup_ms before this commit, an immutable bound: the day partitions before it
                -- are pruned when the statement is planned)
                -- answered with their seq, the others given the next seqs in order, their frames
                -- completed with the seq (`{"seq":N,"eventId":"N"` + the tail ingest rendered,
                -- docs/stream-protocol.md), inserted, and the counter moved. Returns per event its
                -- seq, and whether it was there already. An unknown tenant raises P0002.
                CREATE FUNCTION append_events(
                    p_tenant text, p_committed_ms bigint, p_dedup_ms bigint,
                    p_msg_ids text[], p_swarm_ids text[], p_agent_ids text[], p_kinds smallint[],
                    p_severities smallint[], p_occurred_ms bigint[], p_tails bytea[],
                    OUT seqs bigint[], OUT duplicates boolean[]
                ) LANGUAGE plpgsql AS $fn$
                DECLARE
                    first_seq bigint;
                    committed timestamptz := to_timestamp(p_committed_ms / 1000.0);
                    accepted bigint;
                BEGIN
                    SELECT next_seq INTO first_seq FROM tenants WHERE tenant_id = p_tenant FOR UPDATE;
                    IF NOT FOUND THEN
                        RAISE EXCEPTION 'tenant % does not exist', p_tenant USING ERRCODE = 'P0002';
                    END IF;
                    WITH input AS (
                        SELECT * FROM unnest(p_msg_ids, p_swarm_ids, p_agent_ids, p_kinds, p_severities, p_occurred_ms, p_tails)
                            WITH ORDINALITY AS u(msg_id, swarm_id, agent_id, kind, severity, occurred_ms, tail, ord)
                    ), known AS (
                        SELECT DISTINCT ON (e.msg_id) e.msg_id, e.seq FROM events e
                        WHERE e.tenant_id = p_tenant AND e.msg_id = ANY (p_msg_ids)
                          AND e.committed_at >= to_timestamp((p_committed_ms - p_dedup_ms) / 1000.0)
                        ORDER BY e.msg_id, e.seq DESC
                    ), numbered AS (
                        SELECT i.*, k.seq AS known_seq,
                               first_seq - 1 + count(*) FILTER (WHERE k.seq IS NULL) OVER (ORDER BY i.ord) AS new_seq
                        FROM input i LEFT JOIN known k USING (msg_id)
                    ), inserted AS (
                        INSERT INTO events (tenant_id, seq, msg_id, swarm_id, agent_id, kind, severity, occurred_at, committed_at, frame)
                        SELECT p_tenant, n.new_seq, n.msg_id, n.swarm_id, n.agent_id, n.kind, n.severity,
                               to_timestamp(n.occurred_ms / 1000.0), committed,
                               convert_to('{"seq":' || n.new_seq || ',"eventId":"' || n.new_seq || '"', 'UTF8') || n.tail
                        FROM numbered n WHERE n.known_seq IS NULL
                    )
                    SELECT coalesce(array_agg(coalesce(n.known_seq, n.new_seq) ORDER BY n.ord), '{}'),
                           coalesce(array_agg(n.known_seq IS NOT NULL ORDER BY n.ord), '{}'),
                           count(*) FILTER (WHERE n.known_seq IS NULL)
                    INTO seqs, duplicates, accepted FROM numbered n;
                    IF accepted > 0 THEN
                        UPDATE tenants SET next_seq = first_seq + accepted WHERE tenant_id = p_tenant;
                    END IF;
                END
                $fn$;
                """#
        ),
        Migration(
            version: 8,
            name: "an agent's events by seq",
            sql: """
                -- An agent's newest events (control-api's GET /v1/agents/{agentId}/events) read
                -- through an index, not a scan of the tenant's log. On the partitioned table:
                -- each day partition gets its own, and those created later too. Built under a
                -- SHARE lock: appends wait while an existing log is indexed (docs/ingest.md).
                CREATE INDEX events_agent_seq ON events (tenant_id, agent_id, seq);
                """
        ),
        Migration(
            version: 9,
            name: "a trace's spans",
            sql: """
                -- A trace's spans (control-api's GET /v1/traces/{traceId}) through an index of the
                -- trace events only, on the traceId their frames hold: ingest writes nothing new,
                -- the index computes it. Built under a SHARE lock, as migration 8 (docs/ingest.md).
                CREATE INDEX events_trace ON events (tenant_id, (\(EventLogReader.traceIDExpression)), seq)
                    WHERE kind = \(BusEventKind.trace.rawValue);
                """
        ),
        Migration(
            version: 10,
            name: "tenant rates shared by the replicas",
            sql: """
                -- Each tenant's ingest rate as token buckets every replica draws on
                -- (EventLogRateBuckets): keys bulk:<tenant> and priority:<tenant>.
                \(PostgresTokenBuckets.tableSQL(EventLogRateBuckets.table))
                """
        ),
        Migration(
            version: 11,
            name: "maintenance leases",
            sql: """
                -- Which replica does a maintenance round (EventLogRetention's partition drop),
                -- until when: a row, not a session-level advisory lock, which a transaction pooler
                -- would not keep.
                CREATE TABLE maintenance_leases (
                    name text PRIMARY KEY,
                    holder text NOT NULL,
                    until timestamptz NOT NULL
                );
                """
        ),
        Migration(
            version: 12,
            name: "the fleet, kept by the appends",
            sql: #"""
                -- Every agent of every tenant as control-api's fleet answers it, kept by each
                -- append in its transaction (fleet_note), so no service reads every event to
                -- know the fleet. The swarm and the state are the latest by seq (replicas'
                -- appends commit in seq order per tenant, under the tenant's row lock).
                CREATE TABLE fleet_agents (
                    tenant_id text NOT NULL,
                    agent_id text NOT NULL,
                    swarm_id text NOT NULL,
                    swarm_seq bigint NOT NULL,
                    last_seq bigint NOT NULL,
                    last_seen_at timestamptz NOT NULL,
                    state text,
                    state_seq bigint NOT NULL DEFAULT 0,
                    state_changed_at timestamptz NOT NULL,
                    task_summary text,
                    worker boolean NOT NULL DEFAULT false,
                    tmux_session text,
                    host text,
                    PRIMARY KEY (tenant_id, agent_id)
                );
                CREATE INDEX fleet_agents_recent ON fleet_agents (tenant_id, last_seen_at DESC);
                -- Each agent's events and errors (severity error or worse) per minute of commit;
                -- retention keeps two hours.
                CREATE TABLE fleet_minutes (
                    tenant_id text NOT NULL,
                    agent_id text NOT NULL,
                    minute timestamptz NOT NULL,
                    events bigint NOT NULL,
                    errors bigint NOT NULL,
                    PRIMARY KEY (tenant_id, agent_id, minute)
                );

                -- Notes committed events in the fleet, one element per agent (never agent ''):
                -- its latest swarm and seq, its events and errors, and the fields of its latest
                -- state event (state_seq 0 and '' when it sent none here; the summary is the
                -- latest one given, which the latest state event may not give).
                CREATE FUNCTION fleet_note(
                    p_tenant text, p_committed timestamptz, p_agents text[], p_swarms text[], p_last_seqs bigint[],
                    p_events bigint[], p_errors bigint[], p_state_seqs bigint[], p_states text[], p_summaries text[],
                    p_workers boolean[], p_tmux text[], p_hosts text[]
                ) RETURNS void LANGUAGE sql AS $fn$
                    WITH input AS (
                        SELECT agent_id, swarm_id, last_seq, events, errors, coalesce(state_seq, 0) AS state_seq,
                               nullif(state, '') AS state, nullif(summary, '') AS summary, coalesce(worker, false) AS worker,
                               nullif(tmux, '') AS tmux, nullif(host, '') AS host
                        FROM unnest(p_agents, p_swarms, p_last_seqs, p_events, p_errors, p_state_seqs, p_states, p_summaries,
                                    p_workers, p_tmux, p_hosts)
                            AS u(agent_id, swarm_id, last_seq, events, errors, state_seq, state, summary, worker, tmux, host)
                        WHERE agent_id <> ''
                    ), agents AS (
                        INSERT INTO fleet_agents AS f (tenant_id, agent_id, swarm_id, swarm_seq, last_seq, last_seen_at, state,
                                                       state_seq, state_changed_at, task_summary, worker, tmux_session, host)
                        SELECT p_tenant, agent_id, swarm_id, last_seq, last_seq, p_committed, state, state_seq, p_committed,
                               summary, worker, tmux, host
                        FROM input
                        ON CONFLICT (tenant_id, agent_id) DO UPDATE SET
                            swarm_id = CASE WHEN EXCLUDED.swarm_seq > f.swarm_seq THEN EXCLUDED.swarm_id ELSE f.swarm_id END,
                            swarm_seq = greatest(f.swarm_seq, EXCLUDED.swarm_seq),
                            last_seq = greatest(f.last_seq, EXCLUDED.last_seq),
                            last_seen_at = greatest(f.last_seen_at, EXCLUDED.last_seen_at),
                            state_changed_at = CASE WHEN EXCLUDED.state_seq > f.state_seq AND EXCLUDED.state IS DISTINCT FROM f.state
                                THEN EXCLUDED.state_changed_at ELSE f.state_changed_at END,
                            state = CASE WHEN EXCLUDED.state_seq > f.state_seq THEN EXCLUDED.state ELSE f.state END,
                            task_summary = CASE WHEN EXCLUDED.state_seq > f.state_seq THEN coalesce(EXCLUDED.task_summary, f.task_summary)
                                ELSE f.task_summary END,
                            worker = CASE WHEN EXCLUDED.state_seq > f.state_seq THEN EXCLUDED.worker ELSE f.worker END,
                            tmux_session = CASE WHEN EXCLUDED.state_seq > f.state_seq THEN EXCLUDED.tmux_session ELSE f.tmux_session END,
                            host = CASE WHEN EXCLUDED.state_seq > f.state_seq THEN EXCLUDED.host ELSE f.host END,
                            state_seq = greatest(f.state_seq, EXCLUDED.state_seq)
                    )
                    INSERT INTO fleet_minutes (tenant_id, agent_id, minute, events, errors)
                    SELECT p_tenant, agent_id, date_trunc('minute', p_committed), events, errors FROM input
                    ON CONFLICT (tenant_id, agent_id, minute) DO UPDATE SET
                        events = fleet_minutes.events + EXCLUDED.events, errors = fleet_minutes.errors + EXCLUDED.errors
                $fn$;

                -- append_events (migration 7) that also notes what it commits in the fleet: the
                -- state events' fields come sparse (p_state_ords: their positions in the group,
                -- from 1), and the group is summed up per agent before fleet_note. The old
                -- signature goes: this version's event subjects differ too, so every service is
                -- upgraded together (docs/bus-contract.md).
                DROP FUNCTION append_events(text, bigint, bigint, text[], text[], text[], smallint[], smallint[], bigint[], bytea[]);
                CREATE FUNCTION append_events(
                    p_tenant text, p_committed_ms bigint, p_dedup_ms bigint,
                    p_msg_ids text[], p_swarm_ids text[], p_agent_ids text[], p_kinds smallint[],
                    p_severities smallint[], p_occurred_ms bigint[], p_tails bytea[],
                    p_state_ords integer[], p_states text[], p_summaries text[], p_workers boolean[], p_tmux text[], p_hosts text[],
                    OUT seqs bigint[], OUT duplicates boolean[]
                ) LANGUAGE plpgsql AS $fn$
                DECLARE
                    first_seq bigint;
                    committed timestamptz := to_timestamp(p_committed_ms / 1000.0);
                    accepted bigint;
                    a_agents text[]; a_swarms text[]; a_last bigint[]; a_events bigint[]; a_errors bigint[];
                    a_state_seqs bigint[]; a_states text[]; a_summaries text[]; a_workers boolean[]; a_tmux text[]; a_hosts text[];
                BEGIN
                    SELECT next_seq INTO first_seq FROM tenants WHERE tenant_id = p_tenant FOR UPDATE;
                    IF NOT FOUND THEN
                        RAISE EXCEPTION 'tenant % does not exist', p_tenant USING ERRCODE = 'P0002';
                    END IF;
                    WITH input AS (
                        SELECT * FROM unnest(p_msg_ids, p_swarm_ids, p_agent_ids, p_kinds, p_severities, p_occurred_ms, p_tails)
                            WITH ORDINALITY AS u(msg_id, swarm_id, agent_id, kind, severity, occurred_ms, tail, ord)
                    ), known AS (
                        SELECT DISTINCT ON (e.msg_id) e.msg_id, e.seq FROM events e
                        WHERE e.tenant_id = p_tenant AND e.msg_id = ANY (p_msg_ids)
                          AND e.committed_at >= to_timestamp((p_committed_ms - p_dedup_ms) / 1000.0)
                        ORDER BY e.msg_id, e.seq DESC
                    ), numbered AS (
                        SELECT i.*, k.seq AS known_seq,
                               first_seq - 1 + count(*) FILTER (WHERE k.seq IS NULL) OVER (ORDER BY i.ord) AS new_seq
                        FROM input i LEFT JOIN known k USING (msg_id)
                    ), inserted AS (
                        INSERT INTO events (tenant_id, seq, msg_id, swarm_id, agent_id, kind, severity, occurred_at, committed_at, frame)
                        SELECT p_tenant, n.new_seq, n.msg_id, n.swarm_id, n.agent_id, n.kind, n.severity,
                               to_timestamp(n.occurred_ms / 1000.0), committed,
                               convert_to('{"seq":' || n.new_seq || ',"eventId":"' || n.new_seq || '"', 'UTF8') || n.tail
                        FROM numbered n WHERE n.known_seq IS NULL
                    ), fresh AS (
                        SELECT n.agent_id, n.swarm_id, n.severity, n.new_seq, n.ord FROM numbered n
                        WHERE n.known_seq IS NULL AND n.agent_id <> ''
                    ), states AS (
                        SELECT f.agent_id, f.new_seq, s.state, nullif(s.summary, '') AS summary, s.worker, s.tmux, s.host
                        FROM fresh f JOIN unnest(p_state_ords, p_states, p_summaries, p_workers, p_tmux, p_hosts)
                            AS s(ord, state, summary, worker, tmux, host) ON s.ord = f.ord
                    ), noted AS (
                        SELECT a.agent_id, a.swarm_id, a.last_seq, a.events, a.errors, s.new_seq AS state_seq, s.state,
                               m.summary, s.worker, s.tmux, s.host
                        FROM (
                            SELECT agent_id, (array_agg(swarm_id ORDER BY new_seq DESC))[1] AS swarm_id, max(new_seq) AS last_seq,
                                   count(*) AS events, count(*) FILTER (WHERE severity >= \#(BusSeverity.error.rawValue)) AS errors
                            FROM fresh GROUP BY agent_id
                        ) a
                        LEFT JOIN (SELECT DISTINCT ON (agent_id) * FROM states ORDER BY agent_id, new_seq DESC) s USING (agent_id)
                        LEFT JOIN (
                            SELECT DISTINCT ON (agent_id) agent_id, summary FROM states WHERE summary IS NOT NULL
                            ORDER BY agent_id, new_seq DESC
                        ) m USING (agent_id)
                    )
                    SELECT coalesce(array_agg(coalesce(n.known_seq, n.new_seq) ORDER BY n.ord), '{}'),
                           coalesce(array_agg(n.known_seq IS NOT NULL ORDER BY n.ord), '{}'),
                           count(*) FILTER (WHERE n.known_seq IS NULL),
                           (SELECT array_agg(agent_id ORDER BY agent_id) FROM noted),
                           (SELECT array_agg(swarm_id ORDER BY agent_id) FROM noted),
                           (SELECT array_agg(last_seq ORDER BY agent_id) FROM noted),
                           (SELECT array_agg(events ORDER BY agent_id) FROM noted),
                           (SELECT array_agg(errors ORDER BY agent_id) FROM noted),
                           (SELECT array_agg(state_seq ORDER BY agent_id) FROM noted),
                           (SELECT array_agg(state ORDER BY agent_id) FROM noted),
                           (SELECT array_agg(summary ORDER BY agent_id) FROM noted),
                           (SELECT array_agg(worker ORDER BY agent_id) FROM noted),
                           (SELECT array_agg(tmux ORDER BY agent_id) FROM noted),
                           (SELECT array_agg(host ORDER BY agent_id) FROM noted)
                    INTO seqs, duplicates, accepted, a_agents, a_swarms, a_last, a_events, a_errors, a_state_seqs, a_states,
                         a_summaries, a_workers, a_tmux, a_hosts
                    FROM numbered n;
                    IF accepted > 0 THEN
                        UPDATE tenants SET next_seq = first_seq + accepted WHERE tenant_id = p_tenant;
                        IF a_agents IS NOT NULL THEN
                            PERFORM fleet_note(p_tenant, committed, a_agents, a_swarms, a_last, a_events, a_errors, a_state_seqs,
                                               a_states, a_summaries, a_workers, a_tmux, a_hosts);
                        END IF;
                    END IF;
                END
                $fn$;

                -- The fleet of the log as it stands: every agent's latest event, its latest state
                -- event whose frame reads (one that does not is skipped), its last two hours by
                -- minute.
                CREATE FUNCTION migration_frame_json(frame bytea) RETURNS jsonb LANGUAGE plpgsql AS $fn$
                BEGIN
                    RETURN convert_from(frame, 'UTF8')::jsonb;
                EXCEPTION WHEN others THEN
                    RETURN NULL;
                END
                $fn$;
                INSERT INTO fleet_agents (tenant_id, agent_id, swarm_id, swarm_seq, last_seq, last_seen_at, state_changed_at)
                SELECT DISTINCT ON (tenant_id, agent_id) tenant_id, agent_id, swarm_id, seq, seq, committed_at, committed_at
                FROM events WHERE agent_id <> '' ORDER BY tenant_id, agent_id, seq DESC;
                WITH states AS (
                    SELECT DISTINCT ON (tenant_id, agent_id) tenant_id, agent_id, seq, committed_at, migration_frame_json(frame) AS doc
                    FROM events WHERE kind = \#(BusEventKind.state.rawValue) AND jsonb_typeof(migration_frame_json(frame) -> 'state') = 'string'
                    ORDER BY tenant_id, agent_id, seq DESC
                )
                UPDATE fleet_agents f SET state = left(s.doc ->> 'state', \#(EventLogAppender.maxFleetState)), state_seq = s.seq,
                    state_changed_at = s.committed_at,
                    task_summary = left(s.doc ->> 'taskSummary', \#(EventLogAppender.maxTaskSummary)),
                    worker = coalesce(CASE WHEN jsonb_typeof(s.doc -> 'attrs' -> 'worker') = 'boolean'
                                           THEN (s.doc -> 'attrs' ->> 'worker')::boolean END, false),
                    tmux_session = CASE WHEN jsonb_typeof(s.doc -> 'attrs' -> 'tmuxSession') = 'string'
                                             AND octet_length(s.doc -> 'attrs' ->> 'tmuxSession') BETWEEN 1 AND 64
                                        THEN s.doc -> 'attrs' ->> 'tmuxSession' END,
                    host = CASE WHEN jsonb_typeof(s.doc -> 'attrs' -> 'host') = 'string'
                                     AND octet_length(s.doc -> 'attrs' ->> 'host') BETWEEN 1 AND 253
                                THEN s.doc -> 'attrs' ->> 'host' END
                FROM states s WHERE f.tenant_id = s.tenant_id AND f.agent_id = s.agent_id;
                INSERT INTO fleet_minutes (tenant_id, agent_id, minute, events, errors)
                SELECT tenant_id, agent_id, date_trunc('minute', committed_at), count(*),
                       count(*) FILTER (WHERE severity >= \#(BusSeverity.error.rawValue))
                FROM events WHERE agent_id <> '' AND committed_at > now() - interval '2 hours' GROUP BY 1, 2, 3;
                -- In the schema while the migration runs (a service's role may not make temporary ones).
                DROP FUNCTION migration_frame_json(bytea);
                """#
        ),
    ]
}

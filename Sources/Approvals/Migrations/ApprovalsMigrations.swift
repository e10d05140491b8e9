import ServiceKit

/// The `approvals` schema: gates, their audit trail, and the outbox of what is still to be
/// sent for them (outcomes to agents, events to ingest, openings to the notifier).
enum ApprovalsMigrations {
    static let all: [Migration] = [
        Migration(
            version: 1,
            name: "gates, audit, outbox",
            sql: """
                CREATE TABLE gates (
                    tenant_id text NOT NULL,
                    gate_id text NOT NULL,
                    swarm_id text NOT NULL,
                    agent_id text NOT NULL,
                    idempotency_key text NOT NULL,
                    source text NOT NULL,
                    summary text NOT NULL,
                    risk text NOT NULL,
                    recommended_action text,
                    tool text,
                    -- Redacted and bounded JSON text.
                    tool_input text,
                    tool_input_truncated boolean NOT NULL,
                    -- JSON array of {optionId, name, kind}.
                    options text NOT NULL,
                    status text NOT NULL,
                    requested_at timestamptz NOT NULL,
                    expires_at timestamptz NOT NULL,
                    -- Set once, when the gate is settled.
                    receipt_id text,
                    decided_at timestamptz,
                    decided_by text,
                    reason text,
                    option_id text,
                    allow boolean,
                    decision_id text,
                    PRIMARY KEY (tenant_id, gate_id),
                    UNIQUE (tenant_id, swarm_id, agent_id, idempotency_key)
                );
                CREATE INDEX gates_expiring ON gates (expires_at) WHERE status = 'pending';
                CREATE INDEX gates_pending ON gates (tenant_id, swarm_id, agent_id) WHERE status = 'pending';
                CREATE INDEX gates_newest ON gates (tenant_id, requested_at DESC, gate_id DESC);
                CREATE TABLE gate_audit (
                    id bigserial PRIMARY KEY,
                    tenant_id text NOT NULL,
                    gate_id text NOT NULL,
                    at timestamptz NOT NULL,
                    actor text NOT NULL,
                    action text NOT NULL,
                    detail text
                );
                CREATE INDEX gate_audit_gate ON gate_audit (tenant_id, gate_id, id);
                -- Written in the transaction that changes a gate; sent and deleted by GateOutbox.
                CREATE TABLE outbox (
                    id bigserial PRIMARY KEY,
                    tenant_id text NOT NULL,
                    kind text NOT NULL,
                    payload bytea NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    attempts integer NOT NULL DEFAULT 0
                );
                """
        ),
        Migration(
            version: 2,
            name: "gates opened by ACP permission requests",
            sql: """
                -- Where the answer of a gate opened by an ACP session/request_permission goes: the
                -- thread, its session, and the request's JSON-RPC id (as JSON).
                ALTER TABLE gates ADD COLUMN acp_thread_id text, ADD COLUMN acp_session_id text, ADD COLUMN acp_request_id text;
                """
        ),
        Migration(
            version: 3,
            name: "how many values a gate masked",
            sql: """
                -- Credentials masked in a gate's summary and tool input (shown next to Approve).
                ALTER TABLE gates ADD COLUMN masked_values integer NOT NULL DEFAULT 0;
                """
        ),
        Migration(
            version: 4,
            name: "the per-thread seq of an ACP gate's request",
            sql: """
                -- The seq of the request in its thread: the answer names it (answers_seq), so the
                -- connector gives it to that request only, and a person's answer in the thread
                -- settles that request's gate only (JSON-RPC ids restart with each agent process).
                ALTER TABLE gates ADD COLUMN acp_request_seq bigint;
                """
        ),
    ]
}

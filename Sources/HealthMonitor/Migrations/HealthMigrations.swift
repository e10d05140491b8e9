import ServiceKit

/// The `health` schema: incidents and their timeline, thresholds and their audit, the rollups
/// the API serves, the outbox of what is still to be sent, and which replica follows which
/// event partition.
enum HealthMigrations {
    static let all: [Migration] = [
        Migration(
            version: 1,
            name: "incidents, thresholds, rollups, outbox",
            sql: """
                CREATE TABLE incidents (
                    tenant_id text NOT NULL,
                    incident_id text NOT NULL,
                    -- rule|subject: one firing incident per fingerprint (the partial index below).
                    fingerprint text NOT NULL,
                    rule text NOT NULL,
                    status text NOT NULL,
                    severity text NOT NULL,
                    summary text NOT NULL,
                    swarm_id text,
                    agent_id text,
                    session_id text,
                    skill_id text,
                    fired_at timestamptz NOT NULL,
                    resolved_at timestamptz,
                    acknowledged_at timestamptz,
                    acknowledged_by text,
                    acknowledge_reason text,
                    PRIMARY KEY (tenant_id, incident_id)
                );
                CREATE UNIQUE INDEX incidents_firing ON incidents (tenant_id, fingerprint) WHERE status = 'firing';
                CREATE INDEX incidents_recent ON incidents (tenant_id, fired_at DESC, incident_id DESC);
                CREATE TABLE incident_timeline (
                    id bigserial PRIMARY KEY,
                    tenant_id text NOT NULL,
                    incident_id text NOT NULL,
                    at timestamptz NOT NULL DEFAULT now(),
                    action text NOT NULL,
                    actor text NOT NULL,
                    detail text
                );
                CREATE INDEX incident_timeline_incident ON incident_timeline (tenant_id, incident_id, id);
                -- A tenant's thresholds (scope 'tenant', target '') and its swarms' and skills'
                -- overrides; vals holds only the values set.
                CREATE TABLE thresholds (
                    tenant_id text NOT NULL,
                    scope text NOT NULL,
                    target text NOT NULL,
                    vals jsonb NOT NULL,
                    version integer NOT NULL,
                    updated_by text NOT NULL,
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (tenant_id, scope, target)
                );
                CREATE TABLE threshold_audit (
                    id bigserial PRIMARY KEY,
                    tenant_id text NOT NULL,
                    scope text NOT NULL,
                    target text NOT NULL,
                    version integer NOT NULL,
                    vals jsonb NOT NULL,
                    actor text NOT NULL,
                    reason text,
                    at timestamptz NOT NULL DEFAULT now()
                );
                -- What the API serves: one document per session (context), skill and swarm,
                -- written by the replica that follows the tenant.
                CREATE TABLE rollups (
                    tenant_id text NOT NULL,
                    kind text NOT NULL,
                    key text NOT NULL,
                    swarm_id text NOT NULL,
                    agent_id text NOT NULL DEFAULT '',
                    doc jsonb NOT NULL,
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (tenant_id, kind, key)
                );
                CREATE INDEX rollups_recent ON rollups (tenant_id, kind, updated_at DESC);
                -- Written in the transaction that changes an incident; sent and deleted by the
                -- outbox relay.
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
            name: "replicas and the leases of event partitions",
            sql: """
                -- Each replica's heartbeat: a replica counts while seen_until is ahead.
                CREATE TABLE replicas (
                    replica text PRIMARY KEY,
                    seen_until timestamptz NOT NULL
                );
                -- Who follows the tenants of each event partition, and until when.
                CREATE TABLE partition_leases (
                    partition integer PRIMARY KEY CHECK (partition >= 0),
                    holder text NOT NULL,
                    until timestamptz NOT NULL
                );
                """
        ),
    ]
}

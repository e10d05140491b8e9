import ServiceKit

/// The `control` schema: tenants, enrolment codes, devices and their refresh-token families,
/// control requests with their commands, and the audit trail.
enum ControlMigrations {
    static let all: [Migration] = [
        Migration(
            version: 1,
            name: "tenants, devices, tokens, controls, audit",
            sql: """
                CREATE TABLE tenants (
                    tenant_id text PRIMARY KEY,
                    created_at timestamptz NOT NULL DEFAULT now()
                );
                -- One-time codes; only the SHA-256 of a code is kept.
                CREATE TABLE enrolment_codes (
                    code_sha256 bytea PRIMARY KEY,
                    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
                    scopes text[] NOT NULL,
                    created_by text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    expires_at timestamptz NOT NULL,
                    used_at timestamptz,
                    device_id text
                );
                CREATE TABLE devices (
                    device_id text PRIMARY KEY,
                    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
                    name text NOT NULL,
                    platform text,
                    scopes text[] NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    revoked_at timestamptz
                );
                -- A family is every refresh token descended from one registration; reuse of a
                -- rotated token revokes the family.
                CREATE TABLE refresh_families (
                    family_id text PRIMARY KEY,
                    device_id text NOT NULL REFERENCES devices (device_id),
                    tenant_id text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    revoked_at timestamptz,
                    revoked_reason text
                );
                CREATE TABLE refresh_tokens (
                    token_sha256 bytea PRIMARY KEY,
                    family_id text NOT NULL REFERENCES refresh_families (family_id),
                    issued_at timestamptz NOT NULL DEFAULT now(),
                    expires_at timestamptz NOT NULL,
                    rotated_at timestamptz
                );
                CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id);
                -- One row per (tenant, requestId): the answer every retry gets.
                CREATE TABLE control_requests (
                    tenant_id text NOT NULL,
                    request_id text NOT NULL,
                    actor text NOT NULL,
                    fingerprint bytea NOT NULL,
                    receipt jsonb NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (tenant_id, request_id)
                );
                -- One command per agent of a request; published_at is set once JetStream stored it
                -- (until then the dispatcher publishes it again).
                CREATE TABLE commands (
                    command_id text PRIMARY KEY,
                    tenant_id text NOT NULL,
                    request_id text NOT NULL,
                    swarm_id text NOT NULL,
                    agent_id text NOT NULL,
                    action text NOT NULL,
                    reason text NOT NULL,
                    actor text NOT NULL,
                    issued_at timestamptz NOT NULL,
                    expires_at timestamptz NOT NULL,
                    published_at timestamptz,
                    state text NOT NULL DEFAULT 'pending',
                    agent_state text,
                    message text,
                    acknowledged_at timestamptz
                );
                CREATE INDEX commands_request ON commands (tenant_id, request_id);
                CREATE INDEX commands_agent ON commands (tenant_id, agent_id, issued_at DESC);
                CREATE INDEX commands_unpublished ON commands (issued_at) WHERE published_at IS NULL;
                CREATE TABLE audit (
                    audit_id bigserial PRIMARY KEY,
                    tenant_id text NOT NULL,
                    at timestamptz NOT NULL DEFAULT now(),
                    actor text NOT NULL,
                    action text NOT NULL,
                    target text NOT NULL,
                    target_id text NOT NULL,
                    reason text NOT NULL,
                    request_id text,
                    command_id text,
                    outcome text NOT NULL
                );
                CREATE INDEX audit_tenant ON audit (tenant_id, audit_id DESC);
                """
        ),
        Migration(
            version: 2,
            name: "the JetStream sequence of each command",
            sql: """
                -- Set with published_at: an agent's acknowledgement must carry the delivery of
                -- this sequence, so one command's token cannot acknowledge another.
                ALTER TABLE commands ADD COLUMN stream_seq bigint;
                """
        ),
        Migration(
            version: 3,
            name: "worker requests",
            sql: """
                -- The input of a worker request (action 'request'); null for the controls.
                ALTER TABLE commands ADD COLUMN input text;
                CREATE INDEX commands_agent_action ON commands (tenant_id, agent_id, action, issued_at DESC);
                """
        ),
        Migration(
            version: 4,
            name: "revocable enrolment codes, absolute refresh lifetime",
            sql: """
                ALTER TABLE enrolment_codes ADD COLUMN revoked_at timestamptz;
                -- No refresh of a family reaches past this, however often it rotates.
                ALTER TABLE refresh_families ADD COLUMN expires_at timestamptz;
                UPDATE refresh_families SET expires_at = created_at + interval '90 days';
                ALTER TABLE refresh_families ALTER COLUMN expires_at SET NOT NULL;
                CREATE INDEX refresh_families_device ON refresh_families (device_id);
                CREATE INDEX devices_tenant ON devices (tenant_id, created_at DESC);
                """
        ),
        Migration(
            version: 5,
            name: "agent sessions",
            sql: """
                -- One agent's command channel, opened by its connector with the ingest key. Only
                -- the connector ends one as 'exited' (its process is gone): that, never a state
                -- the agent reported, takes the agent out of swarm controls.
                CREATE TABLE agent_sessions (
                    tenant_id text NOT NULL,
                    session_id text NOT NULL,
                    swarm_id text NOT NULL,
                    agent_id text NOT NULL,
                    opened_at timestamptz NOT NULL DEFAULT now(),
                    seen_at timestamptz NOT NULL DEFAULT now(),
                    ended_at timestamptz,
                    end_reason text CHECK (end_reason IN ('exited', 'superseded', 'idle')),
                    exit_status integer,
                    PRIMARY KEY (tenant_id, session_id)
                );
                CREATE UNIQUE INDEX agent_sessions_open ON agent_sessions (tenant_id, swarm_id, agent_id) WHERE ended_at IS NULL;
                CREATE INDEX agent_sessions_swarm ON agent_sessions (tenant_id, swarm_id, agent_id, opened_at DESC);
                """
        ),
        Migration(
            version: 6,
            name: "agent sessions die with their ingest key",
            sql: """
                -- The ingest key that opened the session: when it is deleted, the session ends.
                ALTER TABLE agent_sessions ADD COLUMN key_id text;
                ALTER TABLE agent_sessions DROP CONSTRAINT agent_sessions_end_reason_check;
                ALTER TABLE agent_sessions ADD CONSTRAINT agent_sessions_end_reason_check
                    CHECK (end_reason IN ('exited', 'superseded', 'idle', 'key-revoked'));
                """
        ),
        Migration(
            version: 7,
            name: "worker owners",
            sql: """
                -- Seed 004's registrations: the principal (token subject) a worker is registered
                -- to, and what the registration said of it. A worker with no row is the tenant's.
                CREATE TABLE worker_owners (
                    tenant_id text NOT NULL,
                    worker_id text NOT NULL,
                    owner text NOT NULL,
                    workspace_ref text,
                    codex_home_ref text,
                    adapter text,
                    metadata jsonb NOT NULL DEFAULT '{}',
                    registered_at timestamptz NOT NULL DEFAULT now(),
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (tenant_id, worker_id)
                );
                """
        ),
        Migration(
            version: 8,
            name: "sign-in through an OpenID Connect provider",
            sql: """
                -- Logins started and waiting for the provider to send the browser back (ten
                -- minutes at most), and the one-time codes they end in, waiting for the client
                -- that started the login to trade them (two minutes at most). Both single use.
                CREATE TABLE oidc_logins (
                    state_sha256 bytea PRIMARY KEY,
                    tenant_id text NOT NULL,
                    verifier text NOT NULL,
                    nonce text NOT NULL,
                    return_uri text NOT NULL,
                    client_state text,
                    client_challenge text NOT NULL,
                    device_name text NOT NULL,
                    platform text,
                    expires_at timestamptz NOT NULL
                );
                CREATE INDEX oidc_logins_expiry ON oidc_logins (expires_at);
                CREATE TABLE oidc_grants (
                    code_sha256 bytea PRIMARY KEY,
                    tenant_id text NOT NULL,
                    person text NOT NULL,
                    scopes text[] NOT NULL,
                    client_challenge text NOT NULL,
                    device_name text NOT NULL,
                    platform text,
                    expires_at timestamptz NOT NULL
                );
                CREATE INDEX oidc_grants_expiry ON oidc_grants (expires_at);
                -- Who signed in, for a device a provider's sign-in made.
                ALTER TABLE devices ADD COLUMN person text;
                """
        ),
        Migration(
            version: 9,
            name: "sign-ins under way per source",
            sql: """
                -- Where each login came from (the per-source limit key), so a few addresses
                -- cannot hold every login the service allows.
                ALTER TABLE oidc_logins ADD COLUMN source text NOT NULL DEFAULT '';
                CREATE INDEX oidc_logins_source ON oidc_logins (source);
                """
        ),
        Migration(
            version: 10,
            name: "sign-in limit shared by the replicas",
            sql: """
                -- The sign-in limit's token bucket per source address, one for every replica.
                CREATE TABLE sign_in_buckets (
                    key text PRIMARY KEY,
                    tokens double precision NOT NULL,
                    at timestamptz NOT NULL
                );
                CREATE INDEX sign_in_buckets_at ON sign_in_buckets (at);
                """
        ),
        Migration(
            version: 11,
            name: "agents' command queues as cursors",
            sql: """
                -- Each agent's command queue: a cursor over the control stream instead of a
                -- JetStream consumer. Every command for the agent at or below floor (a stream
                -- sequence) is done; stream_epoch names the stream. released_at: when its last
                -- session ended (NULL while one is open); kept a day after, so the agent's next
                -- session goes on from the floor.
                CREATE TABLE agent_queues (
                    tenant_id text NOT NULL,
                    swarm_id text NOT NULL,
                    agent_id text NOT NULL,
                    stream_epoch text NOT NULL,
                    floor bigint NOT NULL DEFAULT 0,
                    released_at timestamptz,
                    PRIMARY KEY (tenant_id, swarm_id, agent_id)
                );
                CREATE INDEX agent_queues_released ON agent_queues (tenant_id, released_at) WHERE released_at IS NOT NULL;
                -- The commands delivered above the floor: done, or in flight since delivered_at.
                CREATE TABLE agent_deliveries (
                    tenant_id text NOT NULL,
                    swarm_id text NOT NULL,
                    agent_id text NOT NULL,
                    seq bigint NOT NULL,
                    delivered_at timestamptz NOT NULL,
                    deliveries integer NOT NULL,
                    done boolean NOT NULL DEFAULT false,
                    PRIMARY KEY (tenant_id, swarm_id, agent_id, seq),
                    FOREIGN KEY (tenant_id, swarm_id, agent_id) REFERENCES agent_queues ON DELETE CASCADE
                );
                """
        ),
    ]
}

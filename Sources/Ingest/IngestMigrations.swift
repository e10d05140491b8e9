import ServiceKit

/// The `ingest` schema: tenants with their sequence counters, ingest keys, the event log and
/// its de-duplication index.
enum IngestMigrations {
    static let all: [Migration] = [
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
    ]
}

import ServiceKit

/// The `pipeline` schema: pipelines with their plan and lease, their stages, and the artifacts
/// each stage attempt made.
enum PipelineMigrations {
    static let all: [Migration] = [
        Migration(
            version: 1,
            name: "pipelines, stages, artifacts",
            sql: """
                CREATE TABLE pipelines (
                    tenant_id text NOT NULL,
                    pipeline_id text NOT NULL,
                    idempotency_key text,
                    title text NOT NULL,
                    goal text NOT NULL,
                    unattended boolean NOT NULL,
                    export boolean NOT NULL,
                    -- JSON object: role → {model, temperature, systemPrompt}, as the pipeline runs them.
                    roles text NOT NULL,
                    -- running, awaitingApproval, completed, failed, stopped.
                    status text NOT NULL,
                    paused boolean NOT NULL DEFAULT false,
                    planner_model text NOT NULL,
                    planner_input_tokens bigint NOT NULL,
                    planner_output_tokens bigint NOT NULL,
                    planner_cache_creation_tokens bigint NOT NULL,
                    planner_cache_read_tokens bigint NOT NULL,
                    planner_cost_usd double precision NOT NULL,
                    error_code text,
                    error_message text,
                    created_by text NOT NULL,
                    created_at timestamptz NOT NULL,
                    updated_at timestamptz NOT NULL,
                    finished_at timestamptz,
                    -- The replica running it, until when (a lease another replica takes over once past).
                    lease_owner text,
                    lease_until timestamptz,
                    PRIMARY KEY (tenant_id, pipeline_id)
                );
                CREATE UNIQUE INDEX pipelines_idempotency ON pipelines (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
                CREATE INDEX pipelines_runnable ON pipelines (updated_at) WHERE status = 'running' AND NOT paused;
                CREATE INDEX pipelines_listing ON pipelines (tenant_id, created_at DESC, pipeline_id DESC);
                CREATE TABLE stages (
                    tenant_id text NOT NULL,
                    pipeline_id text NOT NULL,
                    position integer NOT NULL,
                    role text NOT NULL,
                    task text NOT NULL,
                    -- JSON array of strings.
                    research_urls text NOT NULL,
                    -- waiting, running, completed, approved, rejected, failed, stopped.
                    status text NOT NULL,
                    attempt integer NOT NULL DEFAULT 0,
                    model text,
                    input_tokens bigint,
                    output_tokens bigint,
                    cache_creation_tokens bigint,
                    cache_read_tokens bigint,
                    cost_usd double precision,
                    started_at timestamptz,
                    finished_at timestamptz,
                    gate_id text,
                    decided_by text,
                    reason text,
                    artifact_id text,
                    output text,
                    -- JSON array of {url, status, detail, characters}.
                    fetches text NOT NULL DEFAULT '[]',
                    PRIMARY KEY (tenant_id, pipeline_id, position),
                    FOREIGN KEY (tenant_id, pipeline_id) REFERENCES pipelines ON DELETE CASCADE
                );
                CREATE TABLE artifacts (
                    tenant_id text NOT NULL,
                    pipeline_id text NOT NULL,
                    position integer NOT NULL,
                    attempt integer NOT NULL,
                    artifact_id text NOT NULL,
                    role text NOT NULL,
                    title text NOT NULL,
                    content text NOT NULL,
                    created_at timestamptz NOT NULL,
                    exported_path text,
                    PRIMARY KEY (tenant_id, pipeline_id, position, attempt),
                    UNIQUE (tenant_id, artifact_id),
                    FOREIGN KEY (tenant_id, pipeline_id) REFERENCES pipelines ON DELETE CASCADE
                );
                -- Control commands already applied (a redelivery changes nothing).
                CREATE TABLE applied_commands (
                    tenant_id text NOT NULL,
                    command_id text NOT NULL,
                    -- The outcome reported (applied, noop, rejected) and the state after it.
                    outcome text NOT NULL,
                    state text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (tenant_id, command_id)
                );
                """
        ),
        Migration(
            version: 2,
            name: "provider time of a stage",
            sql: """
                -- Milliseconds the stage's provider call took (the rest of the stage is orchestration).
                ALTER TABLE stages ADD COLUMN provider_ms bigint;
                """
        ),
        Migration(
            version: 3,
            name: "pipeline creations limited across the replicas",
            sql: """
                -- pipeline.creates-per-minute as a token bucket per tenant every replica draws on.
                \(PostgresTokenBuckets.tableSQL(PipelineHandler.creationBucketsTable))
                """
        ),
    ]
}

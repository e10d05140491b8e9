import ServiceKit

/// The `notifier` schema: devices' APNs registrations and rate windows, their preferences, the
/// notices taken (so a redelivered one makes no second push), and the push jobs (the outbox the
/// senders work through), and the ACP threads of silent pushes.
enum NotifierMigrations {
    static let all: [Migration] = [
        Migration(
            version: 1,
            name: "devices, preferences, notices, push jobs",
            sql: """
                CREATE TABLE devices (
                    tenant_id text NOT NULL,
                    device_id text NOT NULL,
                    apns_token text NOT NULL,
                    environment text NOT NULL,
                    topic text NOT NULL,
                    registered_at timestamptz NOT NULL,
                    -- APNs answered BadDeviceToken: the token is not of this environment.
                    invalid_environment boolean NOT NULL DEFAULT false,
                    -- APNs answered 429 for this device: nothing is sent to it before then.
                    throttled_until timestamptz,
                    -- The rate window (milliseconds since the epoch) and the pushes in it.
                    window_start bigint,
                    window_count integer NOT NULL DEFAULT 0,
                    PRIMARY KEY (tenant_id, device_id)
                );
                CREATE TABLE preferences (
                    tenant_id text NOT NULL,
                    device_id text NOT NULL,
                    document text NOT NULL,
                    updated_at timestamptz NOT NULL,
                    PRIMARY KEY (tenant_id, device_id)
                );
                CREATE TABLE notices (
                    tenant_id text NOT NULL,
                    key text NOT NULL,
                    taken_at timestamptz NOT NULL,
                    PRIMARY KEY (tenant_id, key)
                );
                CREATE INDEX notices_taken ON notices (taken_at);
                CREATE TABLE jobs (
                    job_id uuid PRIMARY KEY,
                    tenant_id text NOT NULL,
                    device_id text NOT NULL,
                    key text NOT NULL,
                    -- push (payload rendered) or summary (rendered when sent, from folded).
                    kind text NOT NULL,
                    collapse_id text NOT NULL,
                    push_type text NOT NULL,
                    priority integer NOT NULL,
                    payload text NOT NULL,
                    swarm_id text,
                    folded integer NOT NULL DEFAULT 0,
                    silent boolean NOT NULL DEFAULT false,
                    -- pending, sent, failed or dropped.
                    state text NOT NULL,
                    not_before timestamptz NOT NULL,
                    expires_at timestamptz NOT NULL,
                    attempts integer NOT NULL DEFAULT 0,
                    -- Claimed by a sender whose outcome is not recorded yet.
                    in_flight boolean NOT NULL DEFAULT false,
                    lease_until timestamptz,
                    -- Sent again after an attempt whose outcome was never recorded (a crash or a
                    -- timeout): the device may have it twice.
                    unsure_resends integer NOT NULL DEFAULT 0,
                    created_at timestamptz NOT NULL,
                    finished_at timestamptz,
                    last_status integer,
                    last_reason text,
                    UNIQUE (tenant_id, device_id, key)
                );
                CREATE INDEX jobs_due ON jobs (not_before) WHERE state = 'pending';
                CREATE INDEX jobs_finished ON jobs (finished_at) WHERE state <> 'pending';
                CREATE INDEX jobs_device ON jobs (tenant_id, device_id) WHERE state = 'pending';
                """
        ),
        Migration(
            version: 2,
            name: "ACP threads' silent pushes",
            sql: """
                -- The ACP thread of a silent push (kind acp, push type background): a device that
                -- follows the thread live when the job is due is not sent it.
                ALTER TABLE jobs ADD COLUMN thread_id text;
                """
        ),
    ]
}

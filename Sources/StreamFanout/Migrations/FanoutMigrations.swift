import ServiceKit

/// The `fanout` schema: what stream-fanout itself keeps (the event log is ingest's).
enum FanoutMigrations {
    static let all: [Migration] = [
        Migration(
            version: 1,
            name: "ACP acknowledgements per device and thread",
            sql: """
                CREATE TABLE acp_acks (
                    tenant_id text NOT NULL,
                    -- The access token's subject: one device (or user agent) of the tenant.
                    device_id text NOT NULL,
                    thread_id text NOT NULL,
                    -- The highest per-thread seq the device has acknowledged; never goes back.
                    seq bigint NOT NULL,
                    acked_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (tenant_id, device_id, thread_id)
                );
                """
        )
    ]
}

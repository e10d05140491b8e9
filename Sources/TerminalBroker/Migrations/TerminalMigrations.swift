import ServiceKit

/// terminal-broker's schema: registered hosts, their pinned host keys, the audit trail.
enum TerminalMigrations {
    static let all: [Migration] = [
        Migration(
            version: 1,
            name: "hosts, pinned host keys, audit",
            sql: """
                CREATE TABLE hosts (
                    tenant_id text NOT NULL,
                    host_id text NOT NULL,
                    name text NOT NULL,
                    address text NOT NULL,
                    port integer NOT NULL,
                    username text NOT NULL,
                    tmux_socket text,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    created_by text NOT NULL,
                    PRIMARY KEY (tenant_id, host_id),
                    UNIQUE (tenant_id, name)
                );
                -- The key pinned on first use, per host and port (the host row's address and port
                -- at the time); a changed key blocks attaches until an administrator resets it.
                CREATE TABLE host_keys (
                    tenant_id text NOT NULL,
                    host_id text NOT NULL,
                    address text NOT NULL,
                    port integer NOT NULL,
                    public_key text NOT NULL,
                    pinned_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (tenant_id, host_id, address, port),
                    FOREIGN KEY (tenant_id, host_id) REFERENCES hosts ON DELETE CASCADE
                );
                -- Who did what: hosts registered and removed, trust reset, a key mismatch seen,
                -- every attach with input enabled.
                CREATE TABLE audit (
                    id bigserial PRIMARY KEY,
                    tenant_id text NOT NULL,
                    at timestamptz NOT NULL DEFAULT now(),
                    actor text NOT NULL,
                    action text NOT NULL,
                    host_id text,
                    session_name text,
                    detail text
                );
                CREATE INDEX audit_tenant_at ON audit (tenant_id, at DESC);
                """
        )
    ]
}
